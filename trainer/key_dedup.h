// KeyDedup: maps a batch's feature signs to dense row indices (first
// occurrence order), the step before every Pull.
//
// An open-addressing table reused across batches: its slots are cleared by a
// generation stamp instead of a memset or free, so a batch costs one probe
// per sign and nothing per slot. Not thread-safe: one per worker.
#ifndef SAMPAN_TRAINER_KEY_DEDUP_H_
#define SAMPAN_TRAINER_KEY_DEDUP_H_

#include <cstdint>
#include <vector>

#include "common/hash.h"

namespace sampan {

class KeyDedup {
 public:
  // Starts a batch of at most `max_keys` distinct keys.
  void Reset(size_t max_keys) {
    size_t cap = 16;
    while (cap < 2 * max_keys) cap *= 2;
    if (cap > slots_.size()) {
      slots_.assign(cap, Slot());
      generation_ = 0;
    }
    mask_ = slots_.size() - 1;
    if (++generation_ == 0) {  // wrapped: stamps are ambiguous, clear
      slots_.assign(slots_.size(), Slot());
      generation_ = 1;
    }
    keys_.clear();
  }

  // The row of `key`, appending it to keys() when new.
  uint32_t Index(uint64_t key) {
    size_t i = Mix64(key) & mask_;
    while (true) {
      Slot& s = slots_[i];
      if (s.generation != generation_) {
        s = Slot{key, static_cast<uint32_t>(keys_.size()), generation_};
        keys_.push_back(key);
        return s.row;
      }
      if (s.key == key) return s.row;
      i = (i + 1) & mask_;
    }
  }

  const std::vector<uint64_t>& keys() const { return keys_; }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t row = 0;
    uint32_t generation = 0;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  uint32_t generation_ = 0;
  std::vector<uint64_t> keys_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_KEY_DEDUP_H_
