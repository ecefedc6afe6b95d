#include "trainer/rank_merge.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/hash.h"

namespace sampan {
namespace {

// A record: the key's 64 bits in two floats' storage (moved by copies only,
// never by arithmetic), its shows, clicks and row_dim gradient floats.
constexpr int kHeadFloats = 4;
// Counts ride in an allreduce of floats as two halves, each exact in a
// float (below 2^24): count = high * 2^16 + low.
constexpr size_t kHalf = size_t{1} << 16;

}  // namespace

CollectiveRankMerge::CollectiveRankMerge(
    const RankMergeOptions& options,
    std::unique_ptr<collective::Communicator> comm)
    : options_(options), comm_(std::move(comm)), counts_(2 * options.size) {}

absl::StatusOr<std::unique_ptr<CollectiveRankMerge>> CollectiveRankMerge::Join(
    const RankMergeOptions& options) {
  collective::CommunicatorOptions c;
  c.coordinator_address = options.coordinator_address;
  c.credentials = options.credentials;
  c.rank = options.rank;
  c.size = options.size;
  c.timeout = options.timeout;
  c.shared_memory = options.shared_memory;
  // Sparse gradients live in host memory: never NCCL.
  c.backend = collective::Backend::kGloo;
  c.name = options.generation > 0
               ? absl::StrCat("rank-merge-g", options.generation)
               : std::string("rank-merge");
  absl::StatusOr<std::unique_ptr<collective::Communicator>> comm =
      collective::NewCommunicator(c);
  if (!comm.ok()) return comm.status();
  return std::unique_ptr<CollectiveRankMerge>(
      new CollectiveRankMerge(options, std::move(*comm)));
}

int CollectiveRankMerge::OwnerOf(uint64_t key, int size) {
  return static_cast<int>(Fmix64(key) % static_cast<uint64_t>(size));
}

absl::Status CollectiveRankMerge::Merge(int row_dim, StepGradients* step) {
  const int size = options_.size;
  if (size == 1) return absl::OkStatus();
  const size_t n = step->keys.size();
  const size_t record = row_dim + kHeadFloats;
  const absl::Time start = absl::Now();
  std::fill(counts_.begin(), counts_.end(), 0.0f);
  counts_[2 * options_.rank] = static_cast<float>(n / kHalf);
  counts_[2 * options_.rank + 1] = static_cast<float>(n % kHalf);
  absl::Status s =
      comm_->AllReduce(counts_.data(), counts_.size(),
                       collective::ReduceOp::kSum, options_.timeout);
  if (!s.ok()) return s;
  const auto count_of = [&](int r) {
    return static_cast<size_t>(counts_[2 * r]) * kHalf +
           static_cast<size_t>(counts_[2 * r + 1]);
  };
  send_.resize(n * record);
  for (size_t k = 0; k < n; ++k) {
    float* rec = &send_[k * record];
    std::memcpy(rec, &step->keys[k], sizeof(uint64_t));
    rec[2] = step->shows[k];
    rec[3] = step->clicks[k];
    std::memcpy(rec + kHeadFloats, &step->grads[k * row_dim],
                row_dim * sizeof(float));
  }
  size_t total = 0;
  for (int r = 0; r < size; ++r) total += count_of(r);
  sum_.Reset(total / size + 16, row_dim);  // about the keys this rank owns
  for (int r = 0; r < size; ++r) {
    const size_t count = count_of(r);
    if (count == 0) continue;
    float* data = send_.data();
    if (r != options_.rank) {
      receive_.resize(count * record);
      data = receive_.data();
    }
    s = comm_->Broadcast(data, count * record, r, options_.timeout);
    if (!s.ok()) return s;
    Absorb(data, count, row_dim);
  }
  sum_.Take(step);
  ++stats_.steps;
  stats_.keys_given += n;
  stats_.keys_pushed += step->keys.size();
  stats_.exchange_time += absl::Now() - start;
  return absl::OkStatus();
}

void CollectiveRankMerge::Absorb(const float* records, size_t count,
                                 int row_dim) {
  const size_t record = row_dim + kHeadFloats;
  for (size_t k = 0; k < count; ++k) {
    const float* rec = records + k * record;
    uint64_t key;
    std::memcpy(&key, rec, sizeof(uint64_t));
    if (OwnerOf(key, options_.size) != options_.rank) continue;
    sum_.Add(key, rec[2], rec[3], rec + kHeadFloats);
  }
}

}  // namespace sampan
