#include "trainer/data/rare_signs.h"

namespace sampan {

void RareSigns::Freeze() {
  kept_.reserve(counts_.size());
  for (const auto& [sign, n] : counts_) {
    if (n >= uint32_t(min_count_)) kept_.insert(sign);
  }
  absl::flat_hash_map<uint64_t, uint32_t>().swap(counts_);
}

void RareSigns::Apply(std::vector<uint64_t>* signs,
                      const std::vector<uint16_t>& slots) const {
  for (size_t j = 0; j < signs->size(); ++j) {
    if (!kept_.contains((*signs)[j])) (*signs)[j] = RareSign(slots[j]);
  }
}

}  // namespace sampan
