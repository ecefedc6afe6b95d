// Both backends are one sharded table. Each shard owns, under its mutex, an
// open-addressing index (hash_index.h) from key to a slot in a chunked arena
// of fixed-stride rows (the accessor's full layout), its writers' last
// sequences and its admission filter.
//
// Memory backend: the arena holds every row.
// RocksDB backend: the arena is the hot tier, a write-through cache bounded
// in bytes. A push locks the shards it touches (ascending order, so never a
// deadlock), computes the new rows off to the side, writes them and the
// shards' sequences as one WriteBatch, and only then installs them in the
// hot tier; so the hot tier never holds a row RocksDB lacks, and dropping a
// row on eviction (CLOCK) loses nothing. Rows a training pull creates before
// any push are the deterministic initial value, recreated identically.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "sparse_table/accessor.h"
#include "sparse_table/admission.h"
#include "sparse_table/hash_index.h"
#include "sparse_table/row_store.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

constexpr uint32_t kNoSlot = ~0u;

// Fixed-stride rows in chunks: growth never moves a row (pointers stay
// valid) and never leaves more than one chunk of slack.
class RowArena {
 public:
  static constexpr uint32_t kChunk = 256;  // rows
  explicit RowArena(uint32_t stride) : stride_(stride) {}
  float* operator[](uint32_t slot) {
    return chunks_[slot / kChunk].get() + size_t{slot % kChunk} * stride_;
  }
  void Grow(uint32_t slots) {
    while (chunks_.size() * kChunk < slots) {
      chunks_.emplace_back(new float[size_t{kChunk} * stride_]);
    }
  }
  size_t bytes() const {
    return chunks_.size() * kChunk * size_t{stride_} * sizeof(float);
  }

 private:
  const uint32_t stride_;
  std::vector<std::unique_ptr<float[]>> chunks_;
};

struct Shard {
  Shard(const TableOptions& o, uint64_t seed, uint32_t stride)
      : index(&slot_key), rows(stride), admission(o, seed) {}
  // std::mutex rather than absl::Mutex: Debian's Abseil is not built for
  // ThreadSanitizer, which then cannot see absl::Mutex synchronize.
  mutable std::mutex mu;
  SlotKeys slot_key ABSL_GUARDED_BY(mu);  // slot -> key
  HashIndex index ABSL_GUARDED_BY(mu);    // key -> slot
  RowArena rows ABSL_GUARDED_BY(mu);
  // CLOCK bits, RocksDB backend only (the memory backend never evicts).
  std::vector<uint8_t> referenced ABSL_GUARDED_BY(mu);
  std::vector<uint32_t> free_slots ABSL_GUARDED_BY(mu);
  uint32_t hand ABSL_GUARDED_BY(mu) = 0;
  // Bumped by every applied push; a pull that read RocksDB unlocked re-reads
  // when it changed.
  uint64_t version ABSL_GUARDED_BY(mu) = 0;
  // Last applied push sequence per writer (exactly-once).
  absl::flat_hash_map<uint64_t, uint64_t> last_sequence ABSL_GUARDED_BY(mu);
  AdmissionFilter admission ABSL_GUARDED_BY(mu);
};

// Key positions of one request, grouped by shard; shards ascending.
struct Group {
  uint32_t shard;
  std::vector<uint32_t> idx;
};

class ShardedTable final : public SparseTable {
 public:
  ShardedTable(const TableOptions& o, std::unique_ptr<RowStore> store)
      : o_(o), acc_(o), stride_(acc_.full_floats()), store_(std::move(store)) {
    for (uint32_t s = 0; s < o.num_shards; ++s) {
      shards_.emplace_back(o, s + 1, stride_);
    }
    // Row, key, CLOCK bit and ~7 bytes of index per hot row; half of the
    // budget (RowStore gives RocksDB's memtables and cache the rest).
    const uint64_t slot_bytes = stride_ * sizeof(float) + 8 + 1 + 7;
    max_slots_ = store_ == nullptr
                     ? kNoSlot
                     : std::max<uint64_t>(16, o.hot_tier_bytes / 2 /
                                                  o.num_shards / slot_bytes);
  }

  // Called before the table is shared, or with every shard lock held.
  absl::Status LoadSequences() {
    for (Shard& sh : shards_) sh.last_sequence.clear();
    return store_->ForEachSequence([&](uint32_t s, uint64_t w, uint64_t q) {
      if (s < shards_.size()) shards_[s].last_sequence[w] = q;
    });
  }

  uint32_t pull_dim() const override { return acc_.pull_dim(); }

  absl::Status Pull(absl::Span<const uint64_t> keys, bool is_training,
                    float* out) override;
  absl::StatusOr<PushResult> Push(const PushBatch& batch) override;
  absl::StatusOr<uint64_t> Shrink() override;
  absl::Status Flush() override {
    return store_ ? store_->SyncWal() : absl::OkStatus();
  }
  absl::Status Snapshot(const std::string& dir) override;
  absl::Status DeltaSnapshot(const std::string& path) override;
  absl::Status ApplyDelta(const std::string& path) override;
  absl::Status BulkLoad(absl::Span<const uint64_t> keys,
                        const float* values) override;
  TableStats Stats() const override;

 private:
  std::vector<Group> GroupByShard(absl::Span<const uint64_t> keys) const {
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
    for (uint32_t i = 0; i < keys.size(); ++i)
      groups[pos[of[i]]].idx.push_back(i);
    return groups;
  }

  float* Find(Shard& sh, uint64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
    const uint32_t slot = sh.index.Find(key);
    if (slot == HashIndex::kEmpty) return nullptr;
    if (store_ != nullptr) sh.referenced[slot] = 1;
    return sh.rows[slot];
  }

  // A slot for `key` (not present), evicting with CLOCK at the budget.
  float* Insert(Shard& sh, uint64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
    uint32_t slot;
    if (!sh.free_slots.empty()) {
      slot = sh.free_slots.back();
      sh.free_slots.pop_back();
      sh.slot_key[slot] = key;
    } else if (sh.slot_key.size() < max_slots_) {
      slot = sh.slot_key.size();
      sh.slot_key.push_back(key);
      sh.rows.Grow(slot + 1);
      if (store_ != nullptr) sh.referenced.push_back(0);
    } else {
      for (;; sh.hand = (sh.hand + 1) % sh.slot_key.size()) {
        if (sh.referenced[sh.hand] == 0) break;
        sh.referenced[sh.hand] = 0;
      }
      slot = sh.hand;
      sh.hand = (sh.hand + 1) % sh.slot_key.size();
      sh.index.Erase(sh.slot_key[slot]);
      sh.slot_key[slot] = key;
      evictions_.fetch_add(1, std::memory_order_relaxed);
    }
    if (store_ != nullptr) sh.referenced[slot] = 1;
    sh.index.Insert(key, slot);
    return sh.rows[slot];
  }

  void Remove(Shard& sh, uint64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu) {
    const uint32_t slot = sh.index.Find(key);
    if (slot == HashIndex::kEmpty) return;
    sh.index.Erase(key);
    sh.free_slots.push_back(slot);
    if (store_ != nullptr) sh.referenced[slot] = 0;
  }

  void LockAll() {
    for (Shard& sh : shards_) sh.mu.lock();
  }
  void UnlockAll() {
    for (auto it = shards_.rbegin(); it != shards_.rend(); ++it) {
      it->mu.unlock();
    }
  }

  // Drops every cached row (RocksDB has them all). All locks held.
  void ClearHot() {
    for (Shard& sh : shards_) {
      sh.index.Clear();
      sh.free_slots.clear();
      for (uint32_t s = 0; s < sh.slot_key.size(); ++s) {
        sh.free_slots.push_back(s);
        sh.referenced[s] = 0;
      }
      ++sh.version;
    }
  }

  bool Finite(const PushBatch& b, size_t i) const {
    const float* g = b.grads + i * pull_dim();
    for (uint32_t j = 0; j < pull_dim(); ++j) {
      if (!std::isfinite(g[j])) return false;
    }
    return std::isfinite(b.shows[i]) && std::isfinite(b.clicks[i]);
  }

  absl::Status MissesFromStore(std::vector<Group>& groups,
                               absl::Span<const uint64_t> keys,
                               std::vector<std::vector<uint32_t>>& misses,
                               std::vector<uint64_t>& versions,
                               bool is_training, float* out);

  const TableOptions o_;
  const CtrAccessor acc_;
  const uint32_t stride_;
  const std::unique_ptr<RowStore> store_;  // null for the memory backend
  uint64_t max_slots_;                     // per shard
  std::deque<Shard> shards_;  // deque: Shard holds a mutex and cannot move
  std::atomic<uint64_t> evictions_{0}, rejected_{0}, unadmitted_{0},
      duplicates_{0}, shrunk_{0};
};

absl::Status ShardedTable::Pull(absl::Span<const uint64_t> keys,
                                bool is_training, float* out) {
  const uint32_t pd = pull_dim();
  std::vector<Group> groups = GroupByShard(keys);
  std::vector<std::vector<uint32_t>> misses(groups.size());
  std::vector<uint64_t> versions(groups.size());
  std::vector<float> tmp(stride_);
  for (size_t g = 0; g < groups.size(); ++g) {
    Shard& sh = shards_[groups[g].shard];
    std::lock_guard<std::mutex> lock(sh.mu);
    versions[g] = sh.version;
    for (uint32_t i : groups[g].idx) {
      float* dst = out + size_t{i} * pd;
      if (const float* row = Find(sh, keys[i])) {
        acc_.Pull(row, dst);
      } else if (store_ != nullptr) {
        misses[g].push_back(i);
      } else if (is_training && !sh.admission.enabled()) {
        float* row = Insert(sh, keys[i]);
        acc_.InitRow(keys[i], row);
        acc_.Pull(row, dst);
      } else {
        std::fill(dst, dst + pd, 0.0f);
      }
    }
  }
  if (store_ == nullptr) return absl::OkStatus();
  return MissesFromStore(groups, keys, misses, versions, is_training, out);
}

// Reads the hot tier's misses with one MultiGet outside the shard locks,
// then caches them; a shard that applied a push meanwhile is re-read.
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
      std::memcpy(Insert(sh, keys[i]), row.data(), stride_ * sizeof(float));
      acc_.Pull(row.data(), dst);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<PushResult> ShardedTable::Push(const PushBatch& b) {
  const uint32_t pd = pull_dim();
  const size_t n = b.keys.size();
  PushResult result;
  std::vector<uint8_t> skip(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (Finite(b, i)) continue;
    rejected_.fetch_add(1, std::memory_order_relaxed);
    if (o_.non_finite == NonFinitePolicy::kRejectBatch) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradient, show or click of key ", b.keys[i], " is not finite"));
    }
    skip[i] = 1;
    ++result.rejected_keys;
  }
  std::vector<Group> groups = GroupByShard(b.keys);
  for (const Group& g : groups) shards_[g.shard].mu.lock();
  struct Unlocker {
    ShardedTable* t;
    std::vector<Group>* groups;
    ~Unlocker() {
      for (auto it = groups->rbegin(); it != groups->rend(); ++it) {
        t->shards_[it->shard].mu.unlock();
      }
    }
  } unlocker{this, &groups};

  // Unique keys of the live shards, each with a scratch row.
  std::vector<const Group*> live;
  absl::flat_hash_map<uint64_t, uint32_t> slot_of;
  std::vector<uint64_t> ukeys;
  std::vector<uint32_t> ushard;
  std::vector<uint8_t> admitted;  // per unique key
  std::vector<float> scratch;
  std::vector<uint64_t> fetch_keys;
  std::vector<uint32_t> fetch_slots;
  for (const Group& g : groups) {
    Shard& sh = shards_[g.shard];
    if (b.sequence != 0) {
      auto it = sh.last_sequence.find(b.writer_id);
      if (it != sh.last_sequence.end() && b.sequence <= it->second) {
        result.duplicate_keys += g.idx.size();
        continue;
      }
    }
    live.push_back(&g);
    for (uint32_t i : g.idx) {
      if (skip[i]) continue;
      auto [it, inserted] = slot_of.try_emplace(b.keys[i], ukeys.size());
      if (!inserted) continue;
      ukeys.push_back(b.keys[i]);
      ushard.push_back(g.shard);
      admitted.push_back(1);
      scratch.resize(scratch.size() + stride_);
      float* row = &scratch[scratch.size() - stride_];
      if (const float* hot = Find(sh, b.keys[i])) {
        std::memcpy(row, hot, stride_ * sizeof(float));
      } else {
        fetch_keys.push_back(b.keys[i]);
        fetch_slots.push_back(ukeys.size() - 1);
      }
    }
  }
  std::vector<std::string> values(fetch_keys.size());
  if (store_ != nullptr && !fetch_keys.empty()) {
    if (absl::Status st = store_->MultiGet(fetch_keys, &values); !st.ok()) {
      return st;
    }
  }
  for (size_t f = 0; f < fetch_keys.size(); ++f) {
    const uint32_t u = fetch_slots[f];
    float* row = &scratch[size_t{u} * stride_];
    if (!values[f].empty()) {
      if (!acc_.Load(reinterpret_cast<const float*>(values[f].data()),
                     values[f].size() / sizeof(float), row)) {
        return absl::DataLossError(
            absl::StrCat("row of key ", ukeys[u], " has a bad size"));
      }
    } else if (shards_[ushard[u]].admission.OnPush(ukeys[u])) {
      acc_.InitRow(ukeys[u], row);
    } else {
      admitted[u] = 0;
    }
  }
  for (const Group* g : live) {
    for (uint32_t i : g->idx) {
      if (skip[i]) continue;
      const uint32_t u = slot_of[b.keys[i]];
      if (!admitted[u]) {
        ++result.unadmitted_keys;
        continue;
      }
      acc_.Push(b.keys[i], &scratch[size_t{u} * stride_], b.grads + i * pd,
                b.shows[i], b.clicks[i]);
      ++result.applied_keys;
    }
  }
  if (store_ != nullptr && !live.empty()) {
    rocksdb::WriteBatch wb;
    for (size_t u = 0; u < ukeys.size(); ++u) {
      if (!admitted[u]) continue;
      const float* row = &scratch[u * stride_];
      store_->PutRow(&wb, ukeys[u], row, acc_.stored_floats(row));
    }
    if (b.sequence != 0) {
      for (const Group* g : live) {
        store_->PutSequence(&wb, g->shard, b.writer_id, b.sequence);
      }
    }
    if (absl::Status st = store_->Write(&wb); !st.ok()) return st;
  }
  // Durable: now the rows and sequences become visible.
  for (size_t u = 0; u < ukeys.size(); ++u) {
    if (!admitted[u]) continue;
    Shard& sh = shards_[ushard[u]];
    float* row = Find(sh, ukeys[u]);
    if (row == nullptr) row = Insert(sh, ukeys[u]);
    std::memcpy(row, &scratch[u * stride_], stride_ * sizeof(float));
  }
  for (const Group* g : live) {
    Shard& sh = shards_[g->shard];
    ++sh.version;
    if (b.sequence != 0) sh.last_sequence[b.writer_id] = b.sequence;
  }
  duplicates_.fetch_add(result.duplicate_keys, std::memory_order_relaxed);
  unadmitted_.fetch_add(result.unadmitted_keys, std::memory_order_relaxed);
  return result;
}

absl::StatusOr<uint64_t> ShardedTable::Shrink() {
  LockAll();
  uint64_t deleted = 0;
  absl::Status st;
  if (store_ == nullptr) {
    for (Shard& sh : shards_) {
      std::vector<uint64_t> doomed;
      // Live slots are the ones the index finds (freed ones are not).
      for (uint32_t slot = 0; slot < sh.slot_key.size(); ++slot) {
        const uint64_t key = sh.slot_key[slot];
        if (sh.index.Find(key) != slot) continue;
        if (acc_.Shrink(sh.rows[slot])) doomed.push_back(key);
      }
      for (uint64_t key : doomed) Remove(sh, key);
      deleted += doomed.size();
    }
  } else {
    std::vector<float> row(stride_);
    st = store_->RewriteRows([&](uint64_t key, const float* stored, uint32_t n,
                                 rocksdb::WriteBatch* wb) {
      if (!acc_.Load(stored, n, row.data())) return;  // leave it for repair
      if (acc_.Shrink(row.data())) {
        store_->DeleteRow(wb, key);
        ++deleted;
      } else {
        store_->PutRow(wb, key, row.data(), acc_.stored_floats(row.data()));
      }
    });
    ClearHot();  // a cache: drop it rather than shrink it twice
  }
  UnlockAll();
  shrunk_.fetch_add(deleted, std::memory_order_relaxed);
  if (!st.ok()) return st;
  return deleted;
}

absl::Status ShardedTable::Snapshot(const std::string& dir) {
  if (!store_) return absl::UnimplementedError("memory table snapshot");
  LockAll();
  absl::Status st = store_->Checkpoint(dir);
  UnlockAll();
  return st;
}

absl::Status ShardedTable::DeltaSnapshot(const std::string& path) {
  if (!store_) return absl::UnimplementedError("memory table snapshot");
  LockAll();
  absl::StatusOr<RowStore::DeltaToken> token = store_->BeginDelta();
  UnlockAll();
  if (!token.ok()) return token.status();
  return store_->WriteDelta(path, *token);
}

absl::Status ShardedTable::ApplyDelta(const std::string& path) {
  if (!store_) return absl::UnimplementedError("memory table delta");
  LockAll();
  absl::Status st = store_->ApplyDelta(path);
  if (st.ok()) st = LoadSequences();
  ClearHot();
  UnlockAll();
  return st;
}

absl::Status ShardedTable::BulkLoad(absl::Span<const uint64_t> keys,
                                    const float* values) {
  std::vector<std::pair<uint64_t, std::vector<float>>> rows(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    rows[i].first = keys[i];
    rows[i].second.resize(stride_);
    acc_.FromPulled(keys[i], values + i * pull_dim(), rows[i].second.data());
  }
  LockAll();
  absl::Status st;
  if (store_ == nullptr) {
    for (auto& [key, row] : rows) {
      Shard& sh = shards_[ShardOf(key, o_.num_shards)];
      float* dst = Find(sh, key);
      if (dst == nullptr) dst = Insert(sh, key);
      std::memcpy(dst, row.data(), stride_ * sizeof(float));
    }
  } else {
    for (auto& [key, row] : rows) row.resize(acc_.stored_floats(row.data()));
    st = store_->Ingest(std::move(rows));
    ClearHot();
  }
  UnlockAll();
  return st;
}

TableStats ShardedTable::Stats() const {
  TableStats stats;
  for (const Shard& sh : shards_) {
    std::lock_guard<std::mutex> lock(sh.mu);
    stats.hot_rows += sh.index.size();
    stats.memory_bytes += sh.rows.bytes() + sh.slot_key.bytes() +
                          sh.index.bytes() + sh.referenced.capacity() +
                          sh.free_slots.capacity() * 4 +
                          sh.admission.memory_bytes();
  }
  stats.rows = store_ ? store_->EstimateRows() : stats.hot_rows;
  stats.disk_bytes = store_ ? store_->DiskBytes() : 0;
  stats.evictions = evictions_.load();
  stats.rejected_keys = rejected_.load();
  stats.unadmitted_keys = unadmitted_.load();
  stats.duplicate_keys = duplicates_.load();
  stats.shrunk_rows = shrunk_.load();
  return stats;
}

}  // namespace

std::unique_ptr<SparseTable> NewMemoryTable(const TableOptions& options) {
  return std::make_unique<ShardedTable>(options, nullptr);
}

absl::StatusOr<std::unique_ptr<SparseTable>> NewRocksDbTable(
    const TableOptions& options) {
  absl::StatusOr<std::unique_ptr<RowStore>> store = RowStore::Open(options);
  if (!store.ok()) return store.status();
  auto table = std::make_unique<ShardedTable>(options, *std::move(store));
  if (absl::Status st = table->LoadSequences(); !st.ok()) return st;
  return std::unique_ptr<SparseTable>(std::move(table));
}

absl::StatusOr<std::unique_ptr<SparseTable>> NewTable(
    const TableOptions& options) {
  if (options.num_shards == 0) {
    return absl::InvalidArgumentError("num_shards must be at least 1");
  }
  if (options.backend == Backend::kRocksDb) return NewRocksDbTable(options);
  return NewMemoryTable(options);
}

absl::Status RestoreSnapshot(const std::string& snapshot_dir,
                             const std::string& data_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(snapshot_dir, ec)) {
    return absl::NotFoundError(absl::StrCat("no snapshot at ", snapshot_dir));
  }
  fs::remove_all(data_dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("remove ", data_dir));
  fs::copy(snapshot_dir, data_dir, fs::copy_options::recursive, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("copy ", snapshot_dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace sampan
