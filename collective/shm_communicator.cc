// The same-host CPU backend: ranks that share a machine meet in one POSIX
// shared-memory segment instead of TCP sockets.
//
// Why: on loopback Gloo's TCP pairs cost ~0.5-1 ms per call and reach well
// under 1 GB/s here (bench/RESULTS.md), bound by syscalls and thread wake-ups
// rather than memory. Here an allreduce is copies and adds in shared memory:
//   per chunk: copy the parts of my input that others reduce into my slot;
//   barrier; reduce my 1/N of the chunk (ranks added in rank order, my own
//   part read in place) into the result area; barrier; copy the reduced
//   chunk out.
// Each element is summed by one rank in a fixed order and copied to all, so
// results are bitwise identical on every rank. Slots and result area are
// double-buffered by chunk parity: a rank that passed chunk k's second
// barrier knows every rank finished copying out chunk k-1, so writing chunk
// k+1 into the same parity is safe with two barriers per chunk.
//
// Barriers spin briefly, then yield (ranks may outnumber cores), check the
// deadline, and look in /proc for peers that died (UNAVAILABLE) so a dead
// rank never costs the whole timeout.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "collective/backends.h"
#include "coordinator/client.h"

namespace sampan {
namespace collective {
namespace {

constexpr size_t kChunkFloats = 256 << 10;  // 1 MiB per rank per chunk
constexpr int kMaxRanks = 64;

struct alignas(64) RankControl {
  std::atomic<uint64_t> phase;  // barriers this rank has arrived at
  std::atomic<int32_t> pid;
};

struct Header {
  RankControl ranks[kMaxRanks];
};

size_t SegmentBytes(int size) {
  // Header, then 2 parities x (size slots + 1 result), each kChunkFloats.
  return sizeof(Header) + 2 * (size + 1) * kChunkFloats * sizeof(float);
}

// True when `pid` no longer runs (gone or a zombie).
bool Dead(int32_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(stat, line)) return true;
  const size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return true;
  const char state = line[paren + 2];
  return state == 'Z' || state == 'X';
}

// out[i] += in[i]; restrict lets the compiler vectorize without checks.
void AddTo(float* __restrict out, const float* __restrict in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] += in[i];
}

void CopyScaled(float* __restrict out, const float* __restrict in, size_t n,
                float scale) {
  if (scale == 1.0f) {
    std::memcpy(out, in, n * sizeof(float));
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = in[i] * scale;
  }
}

class ShmCommunicator : public Communicator {
 public:
  explicit ShmCommunicator(const CommunicatorOptions& options)
      : options_(options) {}

  ~ShmCommunicator() override {
    if (base_ != nullptr) munmap(base_, bytes_);
  }

  // Rank 0 creates the segment and publishes its name through the
  // coordinator; once every rank has mapped it, it is unlinked, so it
  // vanishes with the last process even after a crash.
  absl::Status Connect(CoordinatorClient* client) {
    bytes_ = SegmentBytes(options_.size);
    const std::string key = absl::StrCat("collective/", options_.name, "/shm");
    std::string shm_name;
    int fd = -1;
    if (options_.rank == 0) {
      shm_name =
          absl::StrCat("/sampan-", getpid(), "-", std::random_device()());
      fd = shm_open(shm_name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0 || ftruncate(fd, bytes_) != 0) {
        if (fd >= 0) close(fd);
        shm_unlink(shm_name.c_str());
        return absl::InternalError(
            absl::StrCat("shm_open ", shm_name, ": ", strerror(errno)));
      }
    } else {
      absl::StatusOr<std::string> v =
          client->KvGet(key, true, options_.timeout);
      if (!v.ok()) return v.status();
      shm_name = *v;
      fd = shm_open(shm_name.c_str(), O_RDWR, 0600);
      if (fd < 0) {
        return absl::InternalError(
            absl::StrCat("shm_open ", shm_name, ": ", strerror(errno)));
      }
    }
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
      if (options_.rank == 0) shm_unlink(shm_name.c_str());
      return absl::InternalError(absl::StrCat("mmap: ", strerror(errno)));
    }
    base_ = static_cast<char*>(p);
    header_ = reinterpret_cast<Header*>(base_);
    header_->ranks[options_.rank].pid.store(getpid());
    if (options_.rank == 0) {
      absl::Status s = client->KvPut(key, shm_name);
      if (!s.ok()) {
        shm_unlink(shm_name.c_str());
        return s;
      }
    }
    // A zero-filled segment: phase 0 everywhere. The first barrier also
    // proves every rank mapped it (and wrote its pid).
    absl::Status s = Barrier(options_.timeout);
    if (options_.rank == 0) shm_unlink(shm_name.c_str());
    return s;
  }

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  const char* backend() const override { return "shm"; }

  absl::Status AllReduce(float* data, size_t count, ReduceOp op,
                         absl::Duration timeout) override {
    if (!broken_.ok()) return broken_;
    const absl::Time deadline = absl::Now() + timeout;
    const int n = options_.size, me = options_.rank;
    const float scale = op == ReduceOp::kAverage && n > 1 ? 1.0f / n : 1.0f;
    if (n == 1) {
      if (scale != 1.0f)
        for (size_t i = 0; i < count; ++i) data[i] *= scale;
      return absl::OkStatus();
    }
    for (size_t off = 0; off < count; off += kChunkFloats) {
      const size_t len = std::min(kChunkFloats, count - off);
      const int parity = static_cast<int>(chunk_++ & 1);
      float* chunk = data + off;
      const size_t lo = len * me / n, hi = len * (me + 1) / n;
      // Publish only what the other ranks reduce; my own range is read
      // from `data` directly.
      float* mine = Slot(parity, me);
      std::memcpy(mine, chunk, lo * sizeof(float));
      std::memcpy(mine + hi, chunk + hi, (len - hi) * sizeof(float));
      absl::Status s = Wait(deadline, "AllReduce");
      if (!s.ok()) return s;
      float* result = Slot(parity, n);
      std::memcpy(result + lo, me == 0 ? chunk + lo : Slot(parity, 0) + lo,
                  (hi - lo) * sizeof(float));
      for (int r = 1; r < n; ++r) {  // rank order: the same sum everywhere
        AddTo(result + lo, (r == me ? chunk : Slot(parity, r)) + lo, hi - lo);
      }
      s = Wait(deadline, "AllReduce");
      if (!s.ok()) return s;
      CopyScaled(chunk, result, len, scale);
    }
    return absl::OkStatus();
  }

  absl::Status Broadcast(float* data, size_t count, int root,
                         absl::Duration timeout) override {
    if (!broken_.ok()) return broken_;
    if (root < 0 || root >= options_.size) {
      return absl::InvalidArgumentError("Broadcast: root out of range");
    }
    const absl::Time deadline = absl::Now() + timeout;
    for (size_t off = 0; off < count; off += kChunkFloats) {
      const size_t len = std::min(kChunkFloats, count - off);
      const int parity = static_cast<int>(chunk_++ & 1);
      float* slot = Slot(parity, options_.size);  // the result area
      if (options_.rank == root) {
        std::memcpy(slot, data + off, len * sizeof(float));
      }
      absl::Status s = Wait(deadline, "Broadcast");
      if (!s.ok()) return s;
      if (options_.rank != root) {
        std::memcpy(data + off, slot, len * sizeof(float));
      }
      s = Wait(deadline, "Broadcast");
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status Barrier(absl::Duration timeout) override {
    if (!broken_.ok()) return broken_;
    return Wait(absl::Now() + timeout, "Barrier");
  }

 private:
  float* Slot(int parity, int index) {
    char* data = base_ + sizeof(Header);
    return reinterpret_cast<float*>(data) +
           (static_cast<size_t>(parity) * (options_.size + 1) + index) *
               kChunkFloats;
  }

  // Arrives at the next barrier and waits for every rank to arrive.
  absl::Status Wait(absl::Time deadline, const char* what) {
    const uint64_t target = ++phase_;
    header_->ranks[options_.rank].phase.store(target,
                                              std::memory_order_release);
    for (uint64_t spins = 0;; ++spins) {
      int laggard = -1;
      for (int r = 0; r < options_.size; ++r) {
        if (header_->ranks[r].phase.load(std::memory_order_acquire) < target) {
          laggard = r;
          break;
        }
      }
      if (laggard < 0) return absl::OkStatus();
      if (spins < 64) continue;
      sched_yield();  // ranks may outnumber cores
      if (spins % 1024 != 0) continue;
      const int32_t pid = header_->ranks[laggard].pid.load();
      if (pid != 0 && Dead(pid)) {
        broken_ = absl::UnavailableError(absl::StrCat(
            what, ": rank ", laggard, " (pid ", pid, ") has died"));
        return broken_;
      }
      if (absl::Now() >= deadline) {
        broken_ = absl::DeadlineExceededError(absl::StrCat(
            what, ": rank ", laggard, " did not arrive within the timeout"));
        return broken_;
      }
    }
  }

  const CommunicatorOptions options_;
  // The rest is used by one collective at a time (the class contract).
  size_t bytes_ = 0;
  char* base_ = nullptr;
  Header* header_ = nullptr;
  uint64_t phase_ = 0;  // barriers passed, same on every rank
  uint64_t chunk_ = 0;  // chunks moved, same on every rank (parity)
  absl::Status broken_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> NewShmCommunicator(
    const CommunicatorOptions& options, CoordinatorClient* client) {
  if (options.size > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat("shm: at most ", kMaxRanks, " ranks"));
  }
  auto comm = std::make_unique<ShmCommunicator>(options);
  absl::Status s = comm->Connect(client);
  if (!s.ok()) return s;
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace collective
}  // namespace sampan
