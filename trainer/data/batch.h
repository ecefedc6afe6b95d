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
  // Appends example i of `from` (signs, slots if `from` has them, dense).
  void Append(const Batch& from, size_t i) {
    labels.push_back(from.labels[i]);
    const uint32_t begin = from.offsets[i], end = from.offsets[i + 1];
    signs.insert(signs.end(), from.signs.begin() + begin,
                 from.signs.begin() + end);
    if (!from.slots.empty()) {
      slots.insert(slots.end(), from.slots.begin() + begin,
                   from.slots.begin() + end);
    }
    offsets.push_back(static_cast<uint32_t>(signs.size()));
    dense_dim = from.dense_dim;
    const size_t d = size_t(from.dense_dim);
    dense.insert(dense.end(), from.dense.begin() + i * d,
                 from.dense.begin() + (i + 1) * d);
  }
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_BATCH_H_
