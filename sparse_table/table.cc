// ShardedTable's hot tier and Pull (the design is in sharded_table.h).

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/log.h"
#include "sparse_table/sharded_table.h"

namespace sampan {

namespace {
uint64_t NextTableId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

ShardedTable::ShardedTable(const TableOptions& o,
                           std::unique_ptr<RowStore> store)
    : o_(o),
      id_(NextTableId()),
      acc_(o),
      stride_(acc_.full_floats()),
      store_(std::move(store)) {
  for (uint32_t s = 0; s < o.num_shards; ++s) {
    shards_.emplace_back(o, s + 1, stride_);
  }
  // Row, key, CLOCK bit, slot state and ~7 bytes of index per hot row; half
  // of the budget (sparse_table.h). An eighth bounds the dirty rows one
  // write-back file copies out.
  const uint64_t slot_bytes = stride_ * sizeof(float) + 8 + 1 + 1 + 7;
  max_slots_ = store_ == nullptr
                   ? kNoSlot
                   : std::max<uint64_t>(
                         16, o.hot_tier_bytes / 2 / o.num_shards / slot_bytes);
  // No floor: the crash tests' tiny budgets then write a file per shard,
  // and a death between them leaves shards at different cuts.
  round_copy_bytes_ = std::max<uint64_t>(1, o.hot_tier_bytes / 8);
}

ShardedTable::~ShardedTable() {
  StopWarmUp();
  if (absl::Status st = SaveHotKeys(); !st.ok()) {
    SAMPAN_LOG(WARNING) << "table " << o_.table_name
                        << ": hot keys not saved: " << st.message();
  }
  if (log_ == nullptr) return;
  StopFlusher();
  // A clean shutdown leaves nothing to replay.
  absl::Status st = PersistAndLockAll();
  ReleaseAll();
  if (!st.ok()) SAMPAN_LOG(ERROR) << "table close: " << st.message();
}

absl::Status ShardedTable::LoadSequences() {
  for (Shard& sh : shards_) sh.last_sequence.clear();
  absl::Status st =
      store_->ForEachSequence([&](uint32_t s, uint64_t w, uint64_t q) {
        if (s < shards_.size()) shards_[s].last_sequence[w] = q;
      });
  if (!st.ok()) return st;
  return store_->ForEachShardLsn([&](uint32_t s, uint64_t lsn) {
    if (s < shards_.size()) shards_[s].applied_lsn = lsn;
  });
}

std::vector<Group> ShardedTable::GroupByShard(
    absl::Span<const uint64_t> keys) const {
  std::vector<uint32_t> of(keys.size());
  std::vector<uint32_t> count(shards_.size(), 0);
  for (size_t i = 0; i < keys.size(); ++i) {
    of[i] = ShardOf(keys[i], o_.num_shards);
    ++count[of[i]];
  }
  std::vector<int> pos(shards_.size(), -1);
  std::vector<Group> groups;
  for (uint32_t s = 0; s < shards_.size(); ++s) {
    if (count[s] == 0) continue;
    pos[s] = groups.size();
    groups.push_back({s, {}});
    groups.back().idx.reserve(count[s]);
  }
  for (uint32_t i = 0; i < keys.size(); ++i) {
    groups[pos[of[i]]].idx.push_back(i);
  }
  return groups;
}

uint32_t ShardedTable::FindSlot(Shard& sh, uint64_t key) {
  const uint32_t slot = sh.index.Find(key);
  if (slot != HashIndex::kEmpty && store_ != nullptr) sh.referenced[slot] = 1;
  return slot;
}

float* ShardedTable::Find(Shard& sh, uint64_t key) {
  const uint32_t slot = FindSlot(sh, key);
  return slot == HashIndex::kEmpty ? nullptr : sh.rows[slot];
}

uint32_t ShardedTable::Insert(Shard& sh, uint64_t key, bool may_grow) {
  uint32_t slot = kNoSlot;
  if (!sh.free_slots.empty()) {
    slot = sh.free_slots.back();
    sh.free_slots.pop_back();
  } else if (sh.slot_key.size() >= max_slots_) {
    slot = EvictClean(sh);
    if (slot == kNoSlot && !may_grow) return kNoSlot;
  }
  if (slot == kNoSlot) {
    slot = sh.slot_key.size();
    sh.slot_key.push_back(key);
    sh.rows.Grow(slot + 1);
    if (store_ != nullptr) {
      sh.referenced.push_back(0);
      sh.state.push_back(kClean);
    } else {
      sh.changed.push_back(1);
    }
  }
  if (store_ == nullptr) sh.changed[slot] = 1;
  sh.slot_key[slot] = key;
  if (store_ != nullptr) sh.referenced[slot] = 1;
  sh.index.Insert(key, slot);
  return slot;
}

// CLOCK over the clean slots: two sweeps find one unless all are unclean.
uint32_t ShardedTable::EvictClean(Shard& sh) {
  const uint32_t n = sh.slot_key.size();
  if (sh.unclean >= n) return kNoSlot;
  for (uint64_t step = 0; step < 2ull * n; ++step) {
    const uint32_t slot = sh.hand;
    sh.hand = (sh.hand + 1) % n;
    if (sh.state[slot] != kClean) continue;
    if (sh.referenced[slot] != 0) {
      sh.referenced[slot] = 0;
      continue;
    }
    sh.index.Erase(sh.slot_key[slot]);
    ++sh.evict_epoch;
    evictions_.fetch_add(1, std::memory_order_relaxed);
    return slot;
  }
  return kNoSlot;
}

void ShardedTable::Remove(Shard& sh, uint64_t key) {
  const uint32_t slot = sh.index.Find(key);
  if (slot == HashIndex::kEmpty) return;
  sh.index.Erase(key);
  ++sh.evict_epoch;
  sh.free_slots.push_back(slot);
  if (store_ != nullptr) sh.referenced[slot] = 0;
  if (store_ == nullptr) sh.deleted.push_back(key);  // for the next delta
}

void ShardedTable::LockAll() {
  for (Shard& sh : shards_) sh.mu.lock();
}

void ShardedTable::UnlockAll() {
  for (auto it = shards_.rbegin(); it != shards_.rend(); ++it) {
    it->mu.unlock();
  }
}

void ShardedTable::ClearHot() {
  for (Shard& sh : shards_) DropShardRows(sh);
}

void ShardedTable::DropShardRows(Shard& sh) {
  sh.index.Clear();
  sh.slot_key.Truncate(0);
  sh.rows.Truncate(0);
  sh.referenced.clear();
  sh.state.clear();
  sh.free_slots.clear();
  sh.hand = 0;
  sh.changed.clear();
  sh.dirty_slots.clear();
  sh.unclean = 0;
  sh.first_dirty_lsn = 0;
  ++sh.version;
  ++sh.evict_epoch;
}

bool ShardedTable::Finite(const PushBatch& b, size_t i) const {
  const float* g = b.grads + i * pull_dim();
  for (uint32_t j = 0; j < pull_dim(); ++j) {
    if (!std::isfinite(g[j])) return false;
  }
  return std::isfinite(b.shows[i]) && std::isfinite(b.clicks[i]);
}

absl::Status ShardedTable::Pull(absl::Span<const uint64_t> keys,
                                bool is_training, float* out) {
  return PullAndRecord(keys, is_training, out, nullptr);
}

absl::Status ShardedTable::Pull(absl::Span<const uint64_t> keys,
                                bool is_training, float* out,
                                PullPositions* positions) {
  positions->Clear();
  return PullAndRecord(keys, is_training, out,
                       store_ == nullptr ? positions : nullptr);
}

// Each key's lookup is three dependent loads (its bucket, the slot's key,
// the row), each a likely cache miss in a table larger than L2: keys far
// ahead get their buckets fetched, keys nearer their slot's key and row, so
// that Find and the row copy below mostly hit.
void ShardedTable::PrefetchAhead(const Shard& sh,
                                 absl::Span<const uint64_t> keys,
                                 const std::vector<uint32_t>& idx, size_t k) {
  constexpr size_t kBucketAhead = 16, kRowAhead = 8;
  if (k + kBucketAhead < idx.size()) {
    sh.index.Prefetch(keys[idx[k + kBucketAhead]]);
  }
  if (k + kRowAhead >= idx.size()) return;
  const uint32_t slot = sh.index.HomeSlot(keys[idx[k + kRowAhead]]);
  if (slot >= sh.slot_key.size()) return;
  __builtin_prefetch(sh.slot_key.address(slot));
  const float* row = sh.rows[slot];
  __builtin_prefetch(row);
  __builtin_prefetch(row + sh.rows.stride() - 1);
}

absl::Status ShardedTable::PullAndRecord(absl::Span<const uint64_t> keys,
                                         bool is_training, float* out,
                                         PullPositions* positions) {
  const uint32_t pd = pull_dim();
  std::vector<Group> groups = GroupByShard(keys);
  std::vector<std::vector<uint32_t>> misses(groups.size());
  std::vector<uint64_t> versions(groups.size());
  if (positions != nullptr) {
    positions->table = id_;
    positions->num_keys = keys.size();
    positions->keys_fingerprint = KeysFingerprint(keys);
    positions->order.reserve(keys.size());
    positions->slot.assign(keys.size(), kNoSlot);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    Shard& sh = shards_[groups[g].shard];
    std::lock_guard<std::mutex> lock(sh.mu);
    versions[g] = sh.version;
    const std::vector<uint32_t>& idx = groups[g].idx;
    for (size_t k = 0; k < idx.size(); ++k) {
      PrefetchAhead(sh, keys, idx, k);
      const uint32_t i = idx[k];
      float* dst = out + size_t{i} * pd;
      uint32_t slot = FindSlot(sh, keys[i]);
      if (slot != HashIndex::kEmpty) {
        acc_.Pull(sh.rows[slot], dst);
      } else if (store_ != nullptr) {
        misses[g].push_back(i);
      } else if (is_training && !sh.admission.enabled()) {
        slot = Insert(sh, keys[i], true);
        acc_.InitRow(keys[i], sh.rows[slot]);
        acc_.Pull(sh.rows[slot], dst);
      } else {
        std::fill(dst, dst + pd, 0.0f);
      }
      if (positions != nullptr) positions->slot[i] = slot;
    }
    if (positions != nullptr) {
      positions->group_shard.push_back(groups[g].shard);
      positions->group_epoch.push_back(sh.evict_epoch);
      positions->order.insert(positions->order.end(), groups[g].idx.begin(),
                              groups[g].idx.end());
      positions->group_end.push_back(positions->order.size());
    }
  }
  if (store_ == nullptr) return absl::OkStatus();
  return MissesFromStore(groups, keys, misses, versions, is_training, out);
}

bool ShardedTable::PullIfInMemory(absl::Span<const uint64_t> keys,
                                  bool is_training, float* out) {
  if (store_ == nullptr) return Pull(keys, is_training, out).ok();
  const uint32_t pd = pull_dim();
  for (const Group& g : GroupByShard(keys)) {
    Shard& sh = shards_[g.shard];
    std::lock_guard<std::mutex> lock(sh.mu);
    for (uint32_t i : g.idx) {
      const float* row = Find(sh, keys[i]);
      if (row == nullptr) return false;
      acc_.Pull(row, out + size_t{i} * pd);
    }
  }
  return true;
}

// Reads the hot tier's misses with one MultiGet outside the shard locks,
// then caches them (where a clean row can make room); a shard that applied
// a push meanwhile is re-read.
absl::Status ShardedTable::MissesFromStore(
    std::vector<Group>& groups, absl::Span<const uint64_t> keys,
    std::vector<std::vector<uint32_t>>& misses, std::vector<uint64_t>& versions,
    bool is_training, float* out) {
  const uint32_t pd = pull_dim();
  std::vector<uint64_t> miss_keys;
  for (const auto& m : misses) {
    for (uint32_t i : m) miss_keys.push_back(keys[i]);
  }
  if (miss_keys.empty()) return absl::OkStatus();
  std::vector<std::string> values;
  if (absl::Status st = store_->MultiGet(miss_keys, &values); !st.ok()) {
    return st;
  }
  std::vector<float> row(stride_);
  size_t next = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (misses[g].empty()) continue;
    Shard& sh = shards_[groups[g].shard];
    std::lock_guard<std::mutex> lock(sh.mu);
    const bool changed = sh.version != versions[g];
    for (uint32_t i : misses[g]) {
      std::string& value = values[next++];
      float* dst = out + size_t{i} * pd;
      if (const float* hot = Find(sh, keys[i])) {
        acc_.Pull(hot, dst);
        continue;
      }
      if (changed) {
        absl::StatusOr<bool> found = store_->Get(keys[i], &value);
        if (!found.ok()) return found.status();
        if (!*found) value.clear();
      }
      if (!value.empty()) {
        if (!acc_.Load(reinterpret_cast<const float*>(value.data()),
                       value.size() / sizeof(float), row.data())) {
          return absl::DataLossError(
              absl::StrCat("row of key ", keys[i], " has a bad size"));
        }
      } else if (is_training && !sh.admission.enabled()) {
        acc_.InitRow(keys[i], row.data());
      } else {
        std::fill(dst, dst + pd, 0.0f);
        continue;
      }
      const uint32_t slot = Insert(sh, keys[i], false);
      if (slot != kNoSlot) {
        std::memcpy(sh.rows[slot], row.data(), stride_ * sizeof(float));
      }
      acc_.Pull(row.data(), dst);
    }
  }
  return absl::OkStatus();
}

}  // namespace sampan
