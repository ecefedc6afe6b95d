// RowArena: fixed-stride float rows addressed by a uint32 slot, for the
// hot tiers that pair it with a HashIndex (common/hash_index.h): the
// training tables' (sparse_table/sharded_table.h) and the serving store's
// (serving/hot_rows.h). Not thread-safe: its owner's lock guards it.
#ifndef SAMPAN_COMMON_ROW_ARENA_H_
#define SAMPAN_COMMON_ROW_ARENA_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace sampan {

// Fixed-stride rows in chunks: growth never moves a row (pointers stay
// valid) and never leaves more than one chunk of slack.
class RowArena {
 public:
  static constexpr uint32_t kChunk = 256;  // rows
  explicit RowArena(uint32_t stride) : stride_(stride) {}
  float* operator[](uint32_t slot) {
    return chunks_[slot / kChunk].get() + size_t{slot % kChunk} * stride_;
  }
  const float* operator[](uint32_t slot) const {
    return chunks_[slot / kChunk].get() + size_t{slot % kChunk} * stride_;
  }
  uint32_t stride() const { return stride_; }
  void Grow(uint32_t slots) {
    while (chunks_.size() * kChunk < slots) {
      chunks_.emplace_back(new float[size_t{kChunk} * stride_]);
    }
  }
  // Frees the chunks wholly past the first n slots.
  void Truncate(uint32_t n) {
    chunks_.resize(
        std::min<size_t>(chunks_.size(), (size_t{n} + kChunk - 1) / kChunk));
  }
  size_t bytes() const {
    return chunks_.size() * kChunk * size_t{stride_} * sizeof(float);
  }

 private:
  const uint32_t stride_;
  std::vector<std::unique_ptr<float[]>> chunks_;
};

}  // namespace sampan

#endif  // SAMPAN_COMMON_ROW_ARENA_H_
