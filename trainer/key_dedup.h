// KeyDedup: maps a batch's feature signs to dense row indices (first
// occurrence order), the step before every Pull.
//
// An open-addressing table reused across batches: its slots are cleared by a
// generation stamp instead of a memset or free, so a batch costs one probe
// per sign and nothing per slot. It is sized to twice the previous batch's
// distinct keys (not to the batch's signs, which repeat), so it stays in
// cache, and doubles when a batch brings more. Not thread-safe: one per
// worker.
#ifndef SAMPAN_TRAINER_KEY_DEDUP_H_
#define SAMPAN_TRAINER_KEY_DEDUP_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/hash.h"

namespace sampan {

class KeyDedup {
 public:
  // Starts a batch of at most `max_keys` distinct keys.
  void Reset(size_t max_keys) {
    keys_.clear();
    const size_t expected = distinct_ > 0 ? distinct_ : 1024;
    distinct_ = 0;
    Rehash(Capacity(std::min(max_keys, expected)));
  }

  // Hints that `key` comes soon: its slot is fetched while others probe.
  void Prefetch(uint64_t key) const {
    __builtin_prefetch(&slots_[Mix64(key) & mask_]);
  }

  // The row of `key`, appending it to keys() when new.
  uint32_t Index(uint64_t key) {
    size_t i = Mix64(key) & mask_;
    while (true) {
      Slot& s = slots_[i];
      if (s.generation != generation_) {
        const uint32_t row = static_cast<uint32_t>(keys_.size());
        s = Slot{key, row, generation_};
        keys_.push_back(key);
        distinct_ = keys_.size();
        if (2 * distinct_ > mask_ + 1) Rehash(2 * (mask_ + 1));
        return row;
      }
      if (s.key == key) return s.row;
      i = (i + 1) & mask_;
    }
  }

  // The batch's distinct keys in first-occurrence order.
  const std::vector<uint64_t>& keys() const { return keys_; }
  // Swaps keys() into *out (no copy); keys() is then unspecified until the
  // next Reset.
  void TakeKeys(std::vector<uint64_t>* out) { out->swap(keys_); }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t row = 0;
    uint32_t generation = 0;
  };

  static size_t Capacity(size_t keys) {
    size_t cap = 16;
    while (cap < 2 * keys) cap *= 2;
    return cap;
  }

  // Uses the first `cap` slots under a fresh generation and reinserts
  // keys() there.
  void Rehash(size_t cap) {
    if (cap > slots_.size()) {
      slots_.assign(cap, Slot());
      generation_ = 0;
    }
    mask_ = cap - 1;
    if (++generation_ == 0) {  // wrapped: stamps are ambiguous, clear
      slots_.assign(slots_.size(), Slot());
      generation_ = 1;
    }
    for (uint32_t row = 0; row < keys_.size(); ++row) {
      size_t i = Mix64(keys_[row]) & mask_;
      while (slots_[i].generation == generation_) i = (i + 1) & mask_;
      slots_[i] = Slot{keys_[row], row, generation_};
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  uint32_t generation_ = 0;
  size_t distinct_ = 0;  // keys() of this batch (or the last, at Reset)
  std::vector<uint64_t> keys_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_KEY_DEDUP_H_
