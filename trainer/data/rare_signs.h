// RareSigns: data.min_feature_count. The signs seen at least `min_count`
// times in the training data keep their own rows; every other sign reads as
// its slot's shared rare sign RareSign(slot), so rare values share one
// well-trained row instead of many noisy ones (test and serving rows too:
// a sign never seen in training is rare).
//
// Usage: Count() every training batch, Freeze(), then Apply() to any batch.
// Counting is not thread-safe; a frozen RareSigns is immutable, so Apply
// may run on many threads at once.
#ifndef SAMPAN_TRAINER_DATA_RARE_SIGNS_H_
#define SAMPAN_TRAINER_DATA_RARE_SIGNS_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/hash.h"

namespace sampan {

// The sign every rare value of `slot` maps to.
inline uint64_t RareSign(uint16_t slot) {
  return FeatureSign(slot, "__rare__");
}

class RareSigns {
 public:
  explicit RareSigns(int min_count) : min_count_(min_count) {}

  void Count(const std::vector<uint64_t>& signs) {
    for (uint64_t s : signs) ++counts_[s];
  }
  // Keeps the signs counted at least min_count times; drops the counts.
  void Freeze();

  // Replaces every sign not kept by its slot's rare sign (`slots[j]` is the
  // slot of `(*signs)[j]`).
  void Apply(std::vector<uint64_t>* signs,
             const std::vector<uint16_t>& slots) const;

  size_t kept() const { return kept_.size(); }
  int min_count() const { return min_count_; }

 private:
  const int min_count_;
  absl::flat_hash_map<uint64_t, uint32_t> counts_;
  absl::flat_hash_set<uint64_t> kept_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_RARE_SIGNS_H_
