// One rank of the collective suites (tests/collective_test.cc starts several).
//
// Modes (--mode):
//   sums   AllReduce (sum and average), Broadcast and Barrier for each of
//          --sizes; checks results against a locally computed reference.
//          Exit 0 when all match, 1 on a wrong value, 2 on an error status.
//   loop   Prints "ready" after one AllReduce of --count floats, then repeats
//          it until a call fails; prints "error <code> <ms of that call>"
//          and exits 3 (4 if nothing failed within --loop_seconds).
//   dense  DenseAllReducer over several buffers for a few steps; checks the
//          averages against a double-precision reference and prints
//          "hash <fnv1a of the final bytes>" (exit 1 on a wrong value).
#include <signal.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "collective/communicator.h"
#include "collective/dense_allreducer.h"
#include "common/flags.h"

namespace sampan {
namespace collective {
namespace {

// Small integers: sums over a few ranks are exact in float in any order.
float Value(int rank, size_t i) {
  return static_cast<float>(
      static_cast<int64_t>((i * 131 + rank * 7919) % 211) - 105);
}

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "collective_worker: %s\n", s.ToString().c_str());
  return 2;
}

int RunSums(Communicator* comm, const std::vector<size_t>& sizes,
            absl::Duration timeout) {
  const int n = comm->size(), me = comm->rank();
  for (size_t count : sizes) {
    std::vector<float> data(count);
    for (size_t i = 0; i < count; ++i) data[i] = Value(me, i);
    absl::Status s =
        comm->AllReduce(data.data(), count, ReduceOp::kSum, timeout);
    if (!s.ok()) return Fail(s);
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < n; ++r) want += Value(r, i);
      if (data[i] != want) {
        std::fprintf(stderr, "sum: count %zu index %zu got %g want %g\n", count,
                     i, data[i], want);
        return 1;
      }
    }
    // Average of the same values: (sum * 1/n), identical arithmetic here.
    for (size_t i = 0; i < count; ++i) data[i] = Value(me, i);
    s = comm->AllReduce(data.data(), count, ReduceOp::kAverage, timeout);
    if (!s.ok()) return Fail(s);
    for (size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int r = 0; r < n; ++r) sum += Value(r, i);
      const float want = sum * (1.0f / static_cast<float>(n));
      if (data[i] != want) {
        std::fprintf(stderr, "average: count %zu index %zu got %g want %g\n",
                     count, i, data[i], want);
        return 1;
      }
    }
    const int root = n - 1;
    for (size_t i = 0; i < count; ++i) data[i] = Value(me, i) + 1000.0f * me;
    s = comm->Broadcast(data.data(), count, root, timeout);
    if (!s.ok()) return Fail(s);
    for (size_t i = 0; i < count; ++i) {
      if (data[i] != Value(root, i) + 1000.0f * root) {
        std::fprintf(stderr, "broadcast: count %zu index %zu wrong\n", count,
                     i);
        return 1;
      }
    }
    s = comm->Barrier(timeout);
    if (!s.ok()) return Fail(s);
  }
  std::printf("ok\n");
  return 0;
}

// The first AllReduce (after which the rank says "ready") may wait for the
// slowest rank to finish connecting, so it gets `first_timeout`; the calls
// under test get `timeout`.
int RunLoop(Communicator* comm, size_t count, absl::Duration first_timeout,
            absl::Duration timeout, absl::Duration loop_for) {
  std::vector<float> data(count, 1.0f);
  absl::Status s =
      comm->AllReduce(data.data(), count, ReduceOp::kSum, first_timeout);
  if (!s.ok()) return Fail(s);
  std::printf("ready\n");
  std::fflush(stdout);
  const absl::Time end = absl::Now() + loop_for;
  while (absl::Now() < end) {
    const absl::Time start = absl::Now();
    s = comm->AllReduce(data.data(), count, ReduceOp::kAverage, timeout);
    if (!s.ok()) {
      std::printf("error %s %lld\n", absl::StatusCodeToString(s.code()).c_str(),
                  static_cast<long long>(
                      absl::ToInt64Milliseconds(absl::Now() - start)));
      std::fprintf(stderr, "collective_worker: %s\n", s.ToString().c_str());
      std::fflush(stdout);
      return 3;
    }
  }
  return 4;
}

std::vector<float> DenseGrad(int rank, int step, int buffer, size_t count) {
  std::mt19937 gen(rank * 1000003 + step * 101 + buffer);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(gen);
  return v;
}

int RunDense(Communicator* comm, absl::Duration timeout) {
  // Uneven sizes: some buckets fuse several buffers, one buffer is alone.
  const std::vector<size_t> counts = {3, 1000, 70000, 17, 300000, 5, 4096};
  std::vector<std::vector<float>> grads(counts.size());
  std::vector<absl::Span<float>> spans;
  for (size_t b = 0; b < counts.size(); ++b) {
    grads[b].resize(counts[b]);
    spans.emplace_back(grads[b].data(), counts[b]);
  }
  DenseAllReducerOptions options;
  options.bucket_bytes = 256 << 10;
  options.timeout = timeout;
  DenseAllReducer reducer(comm, spans, options);
  uint64_t hash = 1469598103934665603ull;
  for (int step = 0; step < 3; ++step) {
    for (size_t b = 0; b < counts.size(); ++b) {
      // Write in place: the reducer holds pointers into these buffers.
      std::vector<float> g = DenseGrad(comm->rank(), step, b, counts[b]);
      std::copy(g.begin(), g.end(), grads[b].begin());
      reducer.MarkReady(static_cast<int>(b));  // as backward would
    }
    absl::Status s = reducer.Wait();
    if (!s.ok()) return Fail(s);
    for (size_t b = 0; b < counts.size(); ++b) {
      std::vector<double> want(counts[b], 0.0);
      for (int r = 0; r < comm->size(); ++r) {
        std::vector<float> g = DenseGrad(r, step, b, counts[b]);
        for (size_t i = 0; i < counts[b]; ++i) want[i] += g[i];
      }
      for (size_t i = 0; i < counts[b]; ++i) {
        if (std::fabs(grads[b][i] - want[i] / comm->size()) > 1e-5) {
          std::fprintf(stderr, "dense: step %d buffer %zu index %zu wrong\n",
                       step, b, i);
          return 1;
        }
      }
      const unsigned char* p =
          reinterpret_cast<const unsigned char*>(grads[b].data());
      for (size_t i = 0; i < counts[b] * sizeof(float); ++i) {
        hash = (hash ^ p[i]) * 1099511628211ull;
      }
    }
  }
  std::printf("hash %016llx buckets %d\n",
              static_cast<unsigned long long>(hash), reducer.num_buckets());
  return 0;
}

int Main(int argc, char** argv) {
  // Never outlive the test that started this rank.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  auto flags = Flags::Parse(argc, argv, 1,
                            {"coordinator", "name", "rank", "size", "mode",
                             "sizes", "count", "timeout_ms", "call_timeout_ms",
                             "loop_seconds", "algorithm", "transport"});
  if (!flags.ok()) return Fail(flags.status());
  CommunicatorOptions options;
  options.coordinator_address = flags->Get("coordinator");
  options.name = flags->Get("name", "test");
  options.rank = static_cast<int>(flags->GetInt("rank", 0).value_or(0));
  options.size = static_cast<int>(flags->GetInt("size", 1).value_or(1));
  options.backend = Backend::kGloo;
  options.timeout =
      absl::Milliseconds(flags->GetInt("timeout_ms", 30000).value_or(30000));
  // --transport=shm (the default choice on one host) or gloo (TCP).
  options.shared_memory = flags->Get("transport", "shm") == "shm";
  const std::string algorithm = flags->Get("algorithm", "default");
  if (algorithm == "ring_chunked") {
    options.gloo_algorithm = GlooAlgorithm::kRingChunked;
  } else if (algorithm == "halving_doubling") {
    options.gloo_algorithm = GlooAlgorithm::kHalvingDoubling;
  } else if (algorithm == "gloo_allreduce") {
    options.gloo_algorithm = GlooAlgorithm::kGlooAllreduce;
  }
  const absl::Duration call_timeout = absl::Milliseconds(
      flags
          ->GetInt("call_timeout_ms",
                   absl::ToInt64Milliseconds(options.timeout))
          .value_or(30000));
  auto comm = NewCommunicator(options);
  if (!comm.ok()) return Fail(comm.status());
  const std::string want = flags->Get("transport", "shm");
  if (want != (*comm)->backend()) {
    return Fail(absl::InternalError(
        absl::StrCat("asked for ", want, ", got ", (*comm)->backend())));
  }
  const std::string mode = flags->Get("mode", "sums");
  if (mode == "sums") {
    std::vector<size_t> sizes;
    for (absl::string_view piece :
         absl::StrSplit(flags->Get("sizes", "1"), ',')) {
      size_t v = 0;
      if (!absl::SimpleAtoi(piece, &v))
        return Fail(absl::InvalidArgumentError("--sizes"));
      sizes.push_back(v);
    }
    return RunSums(comm->get(), sizes, call_timeout);
  }
  if (mode == "loop") {
    return RunLoop(
        comm->get(), flags->GetInt("count", 1 << 20).value_or(1 << 20),
        options.timeout, call_timeout,
        absl::Seconds(flags->GetInt("loop_seconds", 60).value_or(60)));
  }
  if (mode == "dense") return RunDense(comm->get(), call_timeout);
  return Fail(absl::InvalidArgumentError("unknown --mode"));
}

}  // namespace
}  // namespace collective
}  // namespace sampan

int main(int argc, char** argv) { return sampan::collective::Main(argc, argv); }
