// HotRows: the serving store's hot tier (serving/row_store.h): decoded rows
// of recently read keys in memory, within a byte budget, shared by every
// View of the store. Built from the training tables' hot-tier parts
// (sparse_table/sharded_table.h): a HashIndex over SlotKeys, RowArena rows,
// CLOCK eviction.
//
// Versions: the store numbers the states it brings (epochs, ascending).
// Each entry records the epoch it was read at, and a View of epoch e uses
// only entries read at e or before. Before the store changes any row it
// stamps every shard with the coming epoch (Stamp), after which only Views
// of that epoch may insert; once the changed rows are in RocksDB it forgets
// them (Forget, or Reset for a new base). So an entry holds its key's row
// from the epoch it was read at until the next epoch that changed the key,
// and no View ever reads a row of another version than its own.
//
// Memory: slots are allocated up to the budget (rows, keys, index, epochs,
// CLOCK bits), then a new row replaces one not referenced since the clock
// hand last passed it. A new row starts unreferenced, so that keys read once
// (a scan, the cold tail of a Zipf stream) leave before keys read again.
//
// Thread-safe: up to 64 shards by key (one per 4 MiB of the first budget,
// so that each shard's allocation granule, 256 rows, stays small beside
// it), each under its own mutex, taken once per call per shard; no lock is
// held while the caller reads RocksDB.
#ifndef SAMPAN_SERVING_HOT_ROWS_H_
#define SAMPAN_SERVING_HOT_ROWS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/types/span.h"
#include "common/hash_index.h"
#include "common/row_arena.h"

namespace sampan {

class HotRows {
 public:
  explicit HotRows(uint64_t budget_bytes);  // see set_budget
  HotRows(const HotRows&) = delete;
  HotRows& operator=(const HotRows&) = delete;

  // For each keys[i]: copies its row valid at `epoch` (row_dim floats) to
  // rows[i * row_dim..] and sets found[i] = 1; otherwise zeros the row,
  // sets found[i] = 0 and appends i to *misses.
  void Find(absl::Span<const uint64_t> keys, uint64_t epoch, int row_dim,
            float* rows, uint8_t* found, std::vector<uint32_t>* misses);

  // Caches the rows of keys[i], i in `idx` with found[i], read at `epoch`
  // from rows[i * row_dim..]; in each shard only while it is stamped with
  // `epoch` (no newer epoch began) and the key is not cached already.
  void Insert(absl::Span<const uint64_t> keys, absl::Span<const uint32_t> idx,
              uint64_t epoch, int row_dim, const float* rows,
              const uint8_t* found);

  // Stamps every shard with `epoch` (above every earlier stamp): from now
  // on only Views of `epoch` insert.
  void Stamp(uint64_t epoch);
  // Drops the rows of `keys` (changed by the epoch stamped last).
  void Forget(absl::Span<const uint64_t> keys);
  // Drops every row and frees their memory (a new base).
  void Reset();
  // Changes the budget. A smaller one stops growth; rows already past it
  // stay until Reset.
  void set_budget(uint64_t bytes) { budget_bytes_ = bytes; }

  struct Stats {
    uint64_t rows = 0;   // cached now
    uint64_t bytes = 0;  // their memory: rows, keys, index, per-slot state
    uint64_t hits = 0;   // keys Find answered, since construction
    uint64_t misses = 0;
  };
  Stats stats() const;

 private:
  static constexpr int kMaxShards = 64;
  struct Shard {
    Shard() : index(&keys) {}
    // std::mutex rather than absl::Mutex, as sparse_table's shards.
    mutable std::mutex mu;
    SlotKeys keys ABSL_GUARDED_BY(mu);  // slot -> key
    HashIndex index ABSL_GUARDED_BY(mu);
    // Rows of the width of the first insert since the last Reset.
    std::unique_ptr<RowArena> rows ABSL_GUARDED_BY(mu);
    std::vector<uint64_t> from ABSL_GUARDED_BY(mu);  // epoch read at
    std::vector<uint8_t> referenced ABSL_GUARDED_BY(mu);
    std::vector<uint32_t> free_slots ABSL_GUARDED_BY(mu);
    uint32_t hand ABSL_GUARDED_BY(mu) = 0;
    uint64_t stamp ABSL_GUARDED_BY(mu) = 0;
  };
  int ShardOfKey(uint64_t key) const;
  // Key indices grouped by shard: order[begin[s]..begin[s + 1]).
  void Group(absl::Span<const uint64_t> keys, absl::Span<const uint32_t> idx,
             std::vector<uint32_t>* order, int* begin) const;
  uint32_t Allocate(Shard& sh, int row_dim)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  static void Clear(Shard& sh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);

  std::atomic<uint64_t> budget_bytes_;
  const int num_shards_;
  std::deque<Shard> shards_;  // deque: Shard holds a mutex and cannot move
  std::atomic<uint64_t> hits_{0}, misses_{0};
};

}  // namespace sampan

#endif  // SAMPAN_SERVING_HOT_ROWS_H_
