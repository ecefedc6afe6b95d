#include "serving/hot_rows.h"

#include <algorithm>
#include <cstring>

#include "common/hash.h"

namespace sampan {
namespace {

// Per cached row besides its floats: key, epoch, CLOCK bit and ~7 bytes of
// index (HashIndex keeps its load between 57% and 85% of 4-byte buckets).
constexpr uint64_t kSlotOverhead = 8 + 8 + 1 + 7;

}  // namespace

HotRows::HotRows(uint64_t budget_bytes)
    : budget_bytes_(budget_bytes),
      num_shards_(
          int(std::clamp<uint64_t>(budget_bytes >> 22, 1, kMaxShards))) {
  shards_.resize(num_shards_);
}

int HotRows::ShardOfKey(uint64_t key) const {
  // The high bits of a mix (HashIndex places keys by another mix).
  return int((static_cast<unsigned __int128>(Mix64(key)) * num_shards_) >> 64);
}

void HotRows::Group(absl::Span<const uint64_t> keys,
                    absl::Span<const uint32_t> idx,
                    std::vector<uint32_t>* order, int* begin) const {
  int count[kMaxShards + 1] = {};
  for (uint32_t i : idx) ++count[ShardOfKey(keys[i]) + 1];
  begin[0] = 0;
  for (int s = 0; s < num_shards_; ++s) begin[s + 1] = begin[s] + count[s + 1];
  int at[kMaxShards];
  std::copy_n(begin, num_shards_, at);
  order->resize(idx.size());
  for (uint32_t i : idx) (*order)[at[ShardOfKey(keys[i])]++] = i;
}

void HotRows::Find(absl::Span<const uint64_t> keys, uint64_t epoch, int row_dim,
                   float* rows, uint8_t* found, std::vector<uint32_t>* misses) {
  std::vector<uint32_t> all(keys.size()), order;
  for (size_t i = 0; i < keys.size(); ++i) all[i] = uint32_t(i);
  int begin[kMaxShards + 1];
  Group(keys, all, &order, begin);
  const size_t bytes = size_t(row_dim) * sizeof(float);
  uint64_t hits = 0;
  for (int s = 0; s < num_shards_; ++s) {
    if (begin[s] == begin[s + 1]) continue;
    Shard& sh = shards_[s];
    std::lock_guard<std::mutex> lock(sh.mu);
    const bool usable =
        sh.rows != nullptr && sh.rows->stride() == uint32_t(row_dim);
    for (int k = begin[s]; k < begin[s + 1]; ++k) {
      // Three dependent loads per key (bucket, slot's key, row), each a
      // likely cache miss: fetch the buckets of keys further ahead and the
      // rows of nearer ones meanwhile (as sparse_table's Pull does).
      if (k + 16 < begin[s + 1]) sh.index.Prefetch(keys[order[k + 16]]);
      if (usable && k + 8 < begin[s + 1]) {
        const uint32_t ahead = sh.index.HomeSlot(keys[order[k + 8]]);
        if (ahead < sh.keys.size()) {
          __builtin_prefetch(sh.keys.address(ahead));
          __builtin_prefetch((*sh.rows)[ahead]);
          __builtin_prefetch((*sh.rows)[ahead] + row_dim - 1);
        }
      }
      const uint32_t i = order[k];
      float* dst = rows + size_t(i) * row_dim;
      const uint32_t slot = usable ? sh.index.Find(keys[i]) : HashIndex::kEmpty;
      if (slot != HashIndex::kEmpty && sh.from[slot] <= epoch) {
        std::memcpy(dst, (*sh.rows)[slot], bytes);
        sh.referenced[slot] = 1;
        found[i] = 1;
        ++hits;
      } else {
        std::memset(dst, 0, bytes);
        found[i] = 0;
        misses->push_back(i);
      }
    }
  }
  hits_.fetch_add(hits, std::memory_order_relaxed);
  misses_.fetch_add(keys.size() - hits, std::memory_order_relaxed);
}

uint32_t HotRows::Allocate(Shard& sh, int row_dim) {
  if (!sh.free_slots.empty()) {
    const uint32_t slot = sh.free_slots.back();
    sh.free_slots.pop_back();
    return slot;
  }
  const uint64_t slot_bytes = uint64_t(row_dim) * sizeof(float) + kSlotOverhead;
  // Whole arena chunks while there are several: the arena allocates them.
  uint64_t max_slots = budget_bytes_ / num_shards_ / slot_bytes;
  if (max_slots >= RowArena::kChunk) max_slots -= max_slots % RowArena::kChunk;
  max_slots = std::max<uint64_t>(16, max_slots);
  const uint32_t n = sh.keys.size();
  if (n < max_slots) {
    if (sh.from.capacity() < max_slots) {  // no doubling past the budget
      sh.from.reserve(max_slots);
      sh.referenced.reserve(max_slots);
    }
    sh.keys.push_back(0);
    sh.rows->Grow(n + 1);
    sh.from.push_back(0);
    sh.referenced.push_back(0);
    return n;
  }
  // CLOCK: every slot is taken (no free ones); two sweeps find one.
  for (;;) {
    const uint32_t slot = sh.hand;
    sh.hand = (sh.hand + 1) % n;
    if (sh.referenced[slot] != 0) {
      sh.referenced[slot] = 0;
      continue;
    }
    sh.index.Erase(sh.keys[slot]);
    return slot;
  }
}

void HotRows::Insert(absl::Span<const uint64_t> keys,
                     absl::Span<const uint32_t> idx, uint64_t epoch,
                     int row_dim, const float* rows, const uint8_t* found) {
  std::vector<uint32_t> order;
  int begin[kMaxShards + 1];
  Group(keys, idx, &order, begin);
  const size_t bytes = size_t(row_dim) * sizeof(float);
  for (int s = 0; s < num_shards_; ++s) {
    if (begin[s] == begin[s + 1]) continue;
    Shard& sh = shards_[s];
    std::lock_guard<std::mutex> lock(sh.mu);
    if (sh.stamp != epoch) continue;  // a newer epoch began: maybe stale
    if (sh.rows == nullptr) sh.rows = std::make_unique<RowArena>(row_dim);
    if (sh.rows->stride() != uint32_t(row_dim)) continue;
    for (int k = begin[s]; k < begin[s + 1]; ++k) {
      const uint32_t i = order[k];
      if (!found[i] || sh.index.Find(keys[i]) != HashIndex::kEmpty) continue;
      const uint32_t slot = Allocate(sh, row_dim);
      sh.keys[slot] = keys[i];
      std::memcpy((*sh.rows)[slot], rows + size_t(i) * row_dim, bytes);
      sh.from[slot] = epoch;
      sh.referenced[slot] = 0;
      sh.index.Insert(keys[i], slot);
    }
  }
}

void HotRows::Stamp(uint64_t epoch) {
  for (Shard& sh : shards_) {
    std::lock_guard<std::mutex> lock(sh.mu);
    sh.stamp = epoch;
  }
}

void HotRows::Forget(absl::Span<const uint64_t> keys) {
  std::vector<uint32_t> all(keys.size()), order;
  for (size_t i = 0; i < keys.size(); ++i) all[i] = uint32_t(i);
  int begin[kMaxShards + 1];
  Group(keys, all, &order, begin);
  for (int s = 0; s < num_shards_; ++s) {
    if (begin[s] == begin[s + 1]) continue;
    Shard& sh = shards_[s];
    std::lock_guard<std::mutex> lock(sh.mu);
    for (int k = begin[s]; k < begin[s + 1]; ++k) {
      const uint64_t key = keys[order[k]];
      const uint32_t slot = sh.index.Find(key);
      if (slot == HashIndex::kEmpty) continue;
      sh.index.Erase(key);
      sh.referenced[slot] = 0;
      sh.free_slots.push_back(slot);
    }
  }
}

void HotRows::Clear(Shard& sh) {
  sh.index = HashIndex(&sh.keys);
  sh.keys = SlotKeys();
  sh.rows = nullptr;
  // Swapped with empty ones: assigning {} would keep their capacity.
  std::vector<uint64_t>().swap(sh.from);
  std::vector<uint8_t>().swap(sh.referenced);
  std::vector<uint32_t>().swap(sh.free_slots);
  sh.hand = 0;
}

void HotRows::Reset() {
  for (Shard& sh : shards_) {
    std::lock_guard<std::mutex> lock(sh.mu);
    Clear(sh);
  }
}

HotRows::Stats HotRows::stats() const {
  Stats out;
  for (const Shard& sh : shards_) {
    std::lock_guard<std::mutex> lock(sh.mu);
    out.rows += sh.keys.size() - sh.free_slots.size();
    out.bytes +=
        sh.keys.bytes() + sh.index.bytes() + (sh.rows ? sh.rows->bytes() : 0) +
        sh.from.capacity() * sizeof(uint64_t) + sh.referenced.capacity() +
        sh.free_slots.capacity() * sizeof(uint32_t);
  }
  out.hits = hits_.load(std::memory_order_relaxed);
  out.misses = misses_.load(std::memory_order_relaxed);
  return out;
}

}  // namespace sampan
