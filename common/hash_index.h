// HashIndexOver<Keys>: an open-addressing (linear probing) map from a key to
// a uint32 slot, storing only the slot: 4 bytes per bucket. The keys live
// with the caller's data (a slot -> key array, `Keys`: anything with a const
// operator[](uint32_t) returning the uint64_t key), which the probe compares
// against, so the index adds no second copy of the key. Grows by 1.5x at 85%
// load, keeping the load between 57% and 85% (about 5-7 bytes per entry).
// HashIndex is the sparse table's: over SlotKeys, chunked so that growing the
// keys never copies them.
//
// Not thread-safe: the owner of the key array owns the index (a table shard
// under its lock; a push queue's pending batch under the queue's).
#ifndef SAMPAN_COMMON_HASH_INDEX_H_
#define SAMPAN_COMMON_HASH_INDEX_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "common/hash.h"

namespace sampan {

// slot -> key, grown in fixed chunks so that growth never copies or leaves
// more than one chunk of slack.
class SlotKeys {
 public:
  static constexpr uint32_t kChunk = 1024;
  uint64_t operator[](uint32_t slot) const {
    return chunks_[slot / kChunk][slot % kChunk];
  }
  uint64_t& operator[](uint32_t slot) {
    return chunks_[slot / kChunk][slot % kChunk];
  }
  const uint64_t* address(uint32_t slot) const {
    return &chunks_[slot / kChunk][slot % kChunk];
  }
  uint32_t size() const { return size_; }
  void push_back(uint64_t key) {
    if (size_ % kChunk == 0) chunks_.emplace_back(new uint64_t[kChunk]);
    chunks_.back()[size_++ % kChunk] = key;
  }
  // Keeps the first n slots, freeing the chunks past them.
  void Truncate(uint32_t n) {
    if (n >= size_) return;
    size_ = n;
    chunks_.resize((size_t{n} + kChunk - 1) / kChunk);
  }
  size_t bytes() const { return chunks_.size() * kChunk * sizeof(uint64_t); }

 private:
  std::vector<std::unique_ptr<uint64_t[]>> chunks_;
  uint32_t size_ = 0;
};

template <typename Keys>
class HashIndexOver {
 public:
  static constexpr uint32_t kEmpty = ~0u;

  // `keys` maps a slot to its key; it must outlive the index (or be replaced
  // by Rebind before the next call).
  explicit HashIndexOver(const Keys* keys) : keys_(keys) {}

  void Rebind(const Keys* keys) { keys_ = keys; }

  uint32_t Find(uint64_t key) const {
    if (size_ == 0) return kEmpty;
    for (size_t b = Home(key);; b = Next(b)) {
      const uint32_t slot = buckets_[b];
      if (slot == kEmpty || (*keys_)[slot] == key) return slot;
    }
  }

  // Hints that Find(key) comes soon: its home bucket is fetched meanwhile.
  void Prefetch(uint64_t key) const {
    if (size_ != 0) __builtin_prefetch(&buckets_[Home(key)]);
  }
  // What key's home bucket holds, unverified: kEmpty, key's slot or another
  // key's. Lets a caller prefetch what Find(key) will most likely touch.
  uint32_t HomeSlot(uint64_t key) const {
    return size_ == 0 ? kEmpty : buckets_[Home(key)];
  }

  // `key` must be absent; (*keys)[slot] must already be `key`.
  void Insert(uint64_t key, uint32_t slot) {
    if ((size_ + 1) * 20 > buckets_.size() * 17) Grow();
    size_t b = Home(key);
    while (buckets_[b] != kEmpty) b = Next(b);
    buckets_[b] = slot;
    ++size_;
  }

  // Removes `key` if present (backward-shift deletion: no tombstones).
  void Erase(uint64_t key) {
    if (size_ == 0) return;
    size_t b = Home(key);
    for (;; b = Next(b)) {
      if (buckets_[b] == kEmpty) return;
      if ((*keys_)[buckets_[b]] == key) break;
    }
    for (size_t j = Next(b);; j = Next(j)) {
      const uint32_t slot = buckets_[j];
      if (slot == kEmpty) break;
      const size_t home = Home((*keys_)[slot]);
      // Move j's entry into the hole at b unless its home lies in (b, j].
      const bool stays =
          b <= j ? (b < home && home <= j) : (b < home || home <= j);
      if (!stays) {
        buckets_[b] = slot;
        b = j;
      }
    }
    buckets_[b] = kEmpty;
    --size_;
  }

  // Empties the index, keeping its buckets: refilling it to its old size
  // does not grow it again.
  void Clear() {
    buckets_.assign(buckets_.size(), kEmpty);
    size_ = 0;
  }
  // Sizes the buckets for n entries without growing on the way.
  void Reserve(size_t n) {
    if (n * 20 > buckets_.size() * 17) Rehash(n * 20 / 17 + 1);
  }
  size_t size() const { return size_; }
  size_t bytes() const { return buckets_.capacity() * sizeof(uint32_t); }

 private:
  // Lemire's multiply-shift range reduction: any bucket count works.
  size_t Home(uint64_t key) const {
    return static_cast<size_t>(
        (static_cast<unsigned __int128>(Mix64(key ^ 0x9e3779b97f4a7c15ULL)) *
         buckets_.size()) >>
        64);
  }
  size_t Next(size_t b) const { return b + 1 == buckets_.size() ? 0 : b + 1; }

  void Grow() { Rehash(buckets_.empty() ? 16 : buckets_.size() * 3 / 2); }

  void Rehash(size_t num_buckets) {
    std::vector<uint32_t> old;
    old.swap(buckets_);
    buckets_.assign(num_buckets, kEmpty);
    for (uint32_t slot : old) {
      if (slot == kEmpty) continue;
      size_t b = Home((*keys_)[slot]);
      while (buckets_[b] != kEmpty) b = Next(b);
      buckets_[b] = slot;
    }
  }

  const Keys* keys_;
  std::vector<uint32_t> buckets_;
  size_t size_ = 0;
};

using HashIndex = HashIndexOver<SlotKeys>;

}  // namespace sampan

#endif  // SAMPAN_COMMON_HASH_INDEX_H_
