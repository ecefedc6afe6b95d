// A batch of parsed examples in compressed-row form: example i owns
// signs[offsets[i] .. offsets[i+1]). Signs are FeatureSign(slot, value).
#ifndef SAMPAN_TRAINER_DATA_BATCH_H_
#define SAMPAN_TRAINER_DATA_BATCH_H_

#include <cstdint>
#include <vector>

namespace sampan {

struct Batch {
  std::vector<float> labels;      // 0 or 1; 0 for unlabeled data
  std::vector<uint32_t> offsets;  // size() == labels.size() + 1
  std::vector<uint64_t> signs;

  size_t size() const { return labels.size(); }
  void Clear() {
    labels.clear();
    offsets.assign(1, 0);
    signs.clear();
  }
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_BATCH_H_
