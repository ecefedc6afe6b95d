// A batch of parsed examples in compressed-row form: example i owns
// signs[offsets[i] .. offsets[i+1]). Signs are FeatureSign(slot, value).
// slots[j], when filled (readers that know fields do), is the slot of
// signs[j]; deep models pool embeddings per slot.
#ifndef SAMPAN_TRAINER_DATA_BATCH_H_
#define SAMPAN_TRAINER_DATA_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sampan {

struct Batch {
  std::vector<float> labels;      // 0 or 1; 0 for unlabeled data
  std::vector<uint32_t> offsets;  // size() == labels.size() + 1
  std::vector<uint64_t> signs;
  std::vector<uint16_t> slots;  // empty or signs.size()
  // Dense inputs, dense_dim per example (row-major); empty when none.
  std::vector<float> dense;
  int dense_dim = 0;

  size_t size() const { return labels.size(); }
  void Clear() {
    labels.clear();
    offsets.assign(1, 0);
    signs.clear();
    slots.clear();
    dense.clear();
  }
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_BATCH_H_
