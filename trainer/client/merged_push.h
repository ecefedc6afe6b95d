// The units of the push path (push_queue.h): gradients merged per key
// before they are sequenced, a request sequenced but not acknowledged, and
// the split of a request's keys into groups (by owner, or held or not).
#ifndef SAMPAN_TRAINER_CLIENT_MERGED_PUSH_H_
#define SAMPAN_TRAINER_CLIENT_MERGED_PUSH_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/hash_index.h"
#include "proto/ps.pb.h"

namespace sampan {

// Gradients merged per key: keys[i] owns grads[i*dim .. (i+1)*dim).
// `index` maps the first `indexed` keys to their entries. It is built only
// once a second batch is merged in: the first is appended as it came (its
// keys are unique when the caller deduplicated them, and a key listed twice
// is still summed by the pserver), and most batches reach the sender alone.
// The index probes `keys` itself (common/hash_index.h: 4 bytes a key, no
// copy of it), hence no copies or moves: Swap exchanges two batches.
struct MergedPush {
  MergedPush() = default;
  MergedPush(const MergedPush&) = delete;
  MergedPush& operator=(const MergedPush&) = delete;

  HashIndexOver<std::vector<uint64_t>> index{&keys};
  size_t indexed = 0;
  std::vector<uint64_t> keys;
  std::vector<float> grads, shows, clicks;
  absl::Time oldest;  // when the first gradient in here was queued

  size_t size() const { return keys.size(); }
  void Clear();  // keeps the index's buckets for the next merge
  void Swap(MergedPush& other);
  // Appends the rows at `positions` without looking for their keys.
  void Append(absl::Span<const uint64_t> keys, const float* grads,
              const float* shows, const float* clicks,
              const std::vector<uint32_t>& positions, uint32_t dim);
  // Adds them to the entries of their keys, appending keys not yet here.
  void Merge(absl::Span<const uint64_t> keys, const float* grads,
             const float* shows, const float* clicks,
             const std::vector<uint32_t>& positions, uint32_t dim);
  // One entry, unindexed: the step both of the above share.
  void AppendOne(uint64_t key, const float* grad, float show, float click,
                 uint32_t dim);
};

// A push request sequenced and sent (at least tried) but not acknowledged:
// it is resent with its sequence, wherever the map says its keys now live.
struct OwedPush {
  ps::PushRequest request;
  absl::Time since;  // when its oldest gradient was queued
};

// The keys of `request` in groups, group(key) < groups: one request per
// group with keys, as (group, request), keeping `request`'s table, writer,
// sequence and partial_ok and its keys' order; `row_dim` floats of grads a
// key.
std::vector<std::pair<uint32_t, ps::PushRequest>> SplitPush(
    const ps::PushRequest& request, uint32_t row_dim, uint32_t groups,
    absl::FunctionRef<uint32_t(uint64_t)> group);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CLIENT_MERGED_PUSH_H_
