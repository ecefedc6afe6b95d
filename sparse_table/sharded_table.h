// ShardedTable: both backends of sparse_table.h (internal to sparse_table/).
// Each shard owns, under its mutex, an open-addressing index
// (common/hash_index.h) from key to a slot in a chunked arena of fixed-stride
// rows (the accessor's full layout), its writers' last sequences and its
// admission filter.
//
// Memory backend: the arena holds every row.
//
// RocksDB backend, durability_log = kRocksDbWal: the arena is a
// write-through cache bounded in bytes. A push locks the shards it touches
// (ascending order, so never a deadlock), computes the new rows off to the
// side, writes them and the shards' sequences as one WriteBatch, and only
// then installs them; so the hot tier never holds a row RocksDB lacks, and
// dropping a row on eviction (CLOCK) loses nothing.
//
// RocksDB backend, durability_log = kRedoLog: the arena is a write-back
// cache. A push computes its rows under the shard locks, appends one record
// to the redo log (LSN order = apply order on every shard, because the
// append happens under those locks), installs the rows as dirty, releases
// the locks and only then waits for the log write (group commit). A flusher
// thread writes every shard's dirty rows, sequences and applied LSN as one
// sorted SST file it ingests (WriteBack::kSstFile; kMemtable: one WriteBatch
// per shard without RocksDB's WAL): each shard in RocksDB is a consistent
// cut "all records up to LSN L". Dirty rows are never evicted; a
// shard whose dirty rows fill its budget is flushed by the pusher before the
// ack (backpressure). Log segments below every shard's first unflushed LSN
// are deleted once RocksDB has the rows in files. Opening replays the log
// records above each shard's cut.
//
// Rows a training pull creates before any push are the deterministic
// initial value, recreated identically, so they are never dirty.
#ifndef SAMPAN_SPARSE_TABLE_SHARDED_TABLE_H_
#define SAMPAN_SPARSE_TABLE_SHARDED_TABLE_H_

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/hash_index.h"
#include "common/row_arena.h"
#include "sparse_table/accessor.h"
#include "sparse_table/admission.h"
#include "sparse_table/redo_log.h"
#include "sparse_table/row_store.h"
#include "sparse_table/sparse_table.h"

namespace sampan {

constexpr uint32_t kNoSlot = ~0u;

// Slot states of the redo-log hot tier.
enum : uint8_t { kClean = 0, kDirty = 1, kFlushing = 2 };

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
  // Bumped whenever a row leaves the hot tier (or the memory table): a row
  // that was not hot and stayed so while this held still has the value
  // RocksDB had, and a slot holds the same key's row (PullPositions).
  uint64_t evict_epoch ABSL_GUARDED_BY(mu) = 0;
  // Last applied push sequence per writer (exactly-once).
  absl::flat_hash_map<uint64_t, uint64_t> last_sequence ABSL_GUARDED_BY(mu);
  AdmissionFilter admission ABSL_GUARDED_BY(mu);

  // --- Memory backend only: what the next delta snapshot holds ---
  std::vector<uint8_t> changed ABSL_GUARDED_BY(mu);   // per slot: 1 = changed
  std::vector<uint64_t> deleted ABSL_GUARDED_BY(mu);  // keys shrink removed

  // --- Redo log mode only ---
  // Serializes flushes of this shard, so they reach RocksDB in order. Taken
  // before mu, never while holding it.
  std::mutex flush_mu;
  std::vector<uint8_t> state ABSL_GUARDED_BY(mu);         // per slot: kClean...
  std::vector<uint32_t> dirty_slots ABSL_GUARDED_BY(mu);  // turned kDirty
  uint32_t unclean ABSL_GUARDED_BY(mu) = 0;  // slots kDirty or kFlushing
  // The LSN of the last record applied here (the cut a flush writes).
  uint64_t applied_lsn ABSL_GUARDED_BY(mu) = 0;
  // The first record not yet in RocksDB: dirty since, or being flushed
  // since (0 = none).
  uint64_t first_dirty_lsn ABSL_GUARDED_BY(mu) = 0;
  uint64_t flushing_from ABSL_GUARDED_BY(mu) = 0;
};

// Order-dependent: the same keys in another order differ (PullPositions).
inline uint64_t KeysFingerprint(absl::Span<const uint64_t> keys) {
  uint64_t h = keys.size();
  for (uint64_t k : keys) h = (h ^ k) * 0x9e3779b97f4a7c15ULL + 1;
  return h;
}

// Key positions of one request, grouped by shard; shards ascending.
struct Group {
  uint32_t shard;
  std::vector<uint32_t> idx;
};

// A push's work under its shard locks: unique keys of the shards that apply
// it, each with a scratch row holding its new value.
struct PushWork {
  std::vector<Group> groups;
  std::vector<const Group*> live;
  absl::flat_hash_map<uint64_t, uint32_t> slot_of;
  std::vector<uint64_t> ukeys;
  std::vector<uint32_t> ushard;
  std::vector<uint8_t> admitted;
  std::vector<float> scratch;
  // Stored rows of the keys that were not hot, read before the locks were
  // taken; usable for a group while its shard's evict_epoch is epochs[g].
  absl::flat_hash_map<uint64_t, std::string> prefetched;
  std::vector<uint64_t> epochs;
};

class ShardedTable final : public SparseTable {
 public:
  ShardedTable(const TableOptions& o, std::unique_ptr<RowStore> store);
  ~ShardedTable() override;

  // Called before the table is shared, or with every shard lock held.
  absl::Status LoadSequences();
  // Redo log mode: replays the log in <data_dir>/redo-<table_name>, makes
  // the result durable in RocksDB and starts the flusher.
  absl::Status OpenRedoLog();
  // Makes what a redo log left durable in RocksDB and deletes the log (a
  // table reopened with durability_log = kRocksDbWal after a crash).
  absl::Status CloseRedoLog();
  std::string RedoLogDir() const;
  bool has_redo_log() const { return log_ != nullptr; }
  // RocksDB backend (hot_keys.cc): reads the rows of the keys the hot tier
  // held when the table last closed or snapshot back into it, in a
  // background thread, until the list ends or the tier is full. Called
  // once, after opening.
  void StartWarmUp();

  uint32_t pull_dim() const override { return acc_.pull_dim(); }
  RowFormat row_format() const override { return o_.row_format; }
  absl::Status Pull(absl::Span<const uint64_t> keys, bool is_training,
                    float* out) override;
  absl::Status Pull(absl::Span<const uint64_t> keys, bool is_training,
                    float* out, PullPositions* positions) override;
  bool PullIfInMemory(absl::Span<const uint64_t> keys, bool is_training,
                      float* out) override;
  absl::StatusOr<PushResult> Push(const PushBatch& batch) override;
  absl::StatusOr<ShrinkResult> Shrink() override;
  absl::Status Flush() override;
  absl::Status Snapshot(const std::string& dir) override;
  absl::Status DeltaSnapshot(const std::string& path) override;
  absl::Status ApplyDelta(const std::string& path) override;
  absl::Status BulkLoad(absl::Span<const uint64_t> keys,
                        const float* values) override;
  TableStats Stats() const override;
  absl::Status ExportShard(
      uint32_t shard, size_t max_rows,
      const std::function<absl::Status(const ShardChunk&)>& sink) override;
  absl::StatusOr<std::unique_ptr<ShardImport>> ImportShard(
      uint32_t shard) override;
  absl::StatusOr<uint64_t> DropShard(uint32_t shard) override;

  // Memory backend: loads the full snapshot file (MemorySnapshotFile) into
  // this empty table.
  absl::Status LoadMemorySnapshot(const std::string& path);
  std::string MemorySnapshotFile(const std::string& dir) const;

 private:
  std::vector<Group> GroupByShard(absl::Span<const uint64_t> keys) const;
  // Pull; records positions (memory backend) unless `positions` is null.
  absl::Status PullAndRecord(absl::Span<const uint64_t> keys, bool is_training,
                             float* out, PullPositions* positions);
  // Prefetches for the lookups of keys[idx[k + ...]] (see table.cc).
  static void PrefetchAhead(const Shard& sh, absl::Span<const uint64_t> keys,
                            const std::vector<uint32_t>& idx, size_t k)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  float* Find(Shard& sh, uint64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  // Find's slot (HashIndex::kEmpty when absent).
  uint32_t FindSlot(Shard& sh, uint64_t key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  // A slot for `key` (not present), evicting a clean row with CLOCK at the
  // budget. With no clean row to evict: grows past the budget if may_grow,
  // else returns kNoSlot.
  uint32_t Insert(Shard& sh, uint64_t key, bool may_grow)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  uint32_t EvictClean(Shard& sh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  void Remove(Shard& sh, uint64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  void LockAll();
  void UnlockAll();
  // Drops every cached row (RocksDB has them all). All locks held.
  void ClearHot();
  // Empties the shard's index and rows (the memory backend's rows, the
  // RocksDB backend's hot tier, dirty rows included), freeing their memory.
  static void DropShardRows(Shard& sh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);

  // Shard moves (shard_move.cc).
  class Import;
  absl::Status CheckShard(const char* op, uint32_t shard) const;
  absl::Status ExportFromStore(
      uint32_t s, size_t max_rows,
      const std::function<absl::Status(const ShardChunk&)>& sink);
  // Deletes shard s's rows and sequences, in memory and stored (durably
  // when `sync`); returns the rows deleted.
  absl::StatusOr<uint64_t> EmptyShard(uint32_t s, bool sync);
  // RocksDB: the rows go into `file` (RowStore::ShardFile), ingested by
  // CommitImport; memory: into the arena (`file` null).
  absl::Status AddImported(uint32_t s, const ShardChunk& chunk,
                           RowStore::ShardFile* file);
  absl::Status CommitImport(
      uint32_t s, const absl::flat_hash_map<uint64_t, uint64_t>& sequences,
      RowStore::ShardFile* file);
  // Redo log: a cut of shard s past every record logged so far (with the log
  // durable through it) into wb, so that recovery replays none of them onto
  // the shard's new rows; 0 without a redo log.
  absl::StatusOr<uint64_t> CutPastLog(uint32_t s, rocksdb::WriteBatch* wb);
  // Writes wb through the WAL; `sync`: and syncs the WAL (also when wb is
  // empty).
  absl::Status WriteDurably(rocksdb::WriteBatch* wb, bool sync);
  bool Finite(const PushBatch& b, size_t i) const;
  absl::Status MissesFromStore(std::vector<Group>& groups,
                               absl::Span<const uint64_t> keys,
                               std::vector<std::vector<uint32_t>>& misses,
                               std::vector<uint64_t>& versions,
                               bool is_training, float* out);

  // Push steps (push.cc). Shard locks of w.groups held for the last three.
  absl::Status CheckFinite(const PushBatch& b, std::vector<uint8_t>* skip,
                           PushResult* result);
  // Reads the rows of the keys not in the hot tier without holding the
  // shard locks, so that a push holds them only to compute.
  absl::Status Prefetch(const PushBatch& b, const std::vector<uint8_t>& skip,
                        PushWork& w);
  absl::Status Compute(const PushBatch& b, const std::vector<uint8_t>& skip,
                       uint64_t replay_lsn, PushWork& w, PushResult& result);
  absl::Status WriteThrough(const PushBatch& b, const PushWork& w);
  void Install(const PushBatch& b, const PushWork& w, uint64_t lsn);
  // Pushes of more keys apply in runs of whole shards of at most this many
  // keys, so that no push holds many shard locks for long.
  static constexpr size_t kMaxKeysPerApply = 4096;
  // The keys of groups [begin, end) of a push, copied out as a push of
  // their own (the same writer and sequence), with its groups and skips.
  struct PushSlice {
    PushSlice(const PushBatch& b, const std::vector<uint8_t>& skip,
              const std::vector<Group>& groups, size_t begin, size_t end,
              uint32_t pull_dim);
    std::vector<uint64_t> keys;
    std::vector<float> grads, shows, clicks;
    std::vector<uint8_t> skip;
    std::vector<Group> groups;
    PushBatch batch;
  };
  absl::Status ApplyShards(const PushBatch& b, const std::vector<uint8_t>& skip,
                           std::vector<Group> groups, PushResult& result,
                           uint64_t* wait_lsn);
  // Applies a logged push (recovery) to the shards whose cut is below lsn.
  absl::Status ReplayPush(uint64_t lsn, const PushBatch& b);
  // Flushes the live shards whose dirty rows reached their budget and
  // trims the ones a push grew past it.
  absl::Status Backpressure(const PushWork& w);
  // Memory backend: the whole push, applied in place, one shard at a time
  // (the keys b.keys[idx[0..n)] of shard s), taking b.positions where they
  // hold.
  void PushInMemory(const PushBatch& b, const std::vector<uint8_t>& skip,
                    PushResult& result);
  bool PositionsFit(const PushBatch& b) const;
  void PushShardInMemory(const PushBatch& b, const std::vector<uint8_t>& skip,
                         uint32_t s, const uint32_t* idx, size_t n,
                         const PullPositions* positions, uint64_t epoch,
                         absl::flat_hash_set<uint64_t>& refused,
                         PushResult& result);
  void TrimToBudget(Shard& sh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);

  // Redo log mode (redo_table.cc).
  void MarkDirty(Shard& sh, uint32_t slot, uint64_t lsn)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  // Marks the shard's dirty rows kFlushing and lists them in *slots; true
  // when a record was applied since the last flush, so its cut (applied
  // LSN and sequences) must be written with them.
  bool TakeDirty(Shard& sh, std::vector<uint32_t>* slots)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  // Adds the shard's dirty rows, sequences and applied LSN to `wb` and marks
  // the rows kFlushing; EndFlush marks them clean (or dirty again on error).
  void BeginFlush(Shard& sh, uint32_t s, rocksdb::WriteBatch* wb,
                  std::vector<uint32_t>* slots)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  // The same into an SST round: rows copied to *copy, or (copy null, the
  // shard lock held until the round is ingested) pointed at in the arena.
  void BeginSstFlush(Shard& sh, uint32_t s, RowStore::SstRound* round,
                     std::vector<uint32_t>* slots, std::vector<float>* copy)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  // WriteBack::kSstFile: writes the dirty rows and cuts of `shards` as one
  // ingested file. Their flush_mu held; their shard locks too if `locked`.
  absl::Status FlushRound(const std::vector<uint32_t>& shards, bool locked);
  void EndFlush(Shard& sh, const std::vector<uint32_t>& slots, bool ok)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(sh.mu);
  absl::Status FlushShard(uint32_t s);
  // Waits until the redo log holds every record a cut taken so far covers.
  absl::Status LogDurableThroughCuts();
  // Shards grouped in order so that each group's dirty rows, copied out for
  // one SST file, stay within round_copy_bytes_ (a shard alone may pass it).
  std::vector<std::vector<uint32_t>> SstRounds();
  absl::Status FlushAllShards();
  std::vector<uint32_t> AllShards() const;
  // The lowest LSN whose effects may not be in RocksDB yet.
  uint64_t UnflushedFrom();
  // Every row, sequence and cut durable in RocksDB's files; log emptied.
  // Takes every flush_mu and shard lock and keeps them (admin operations
  // then run under them); ReleaseAll undoes it.
  absl::Status PersistAndLockAll();
  void ReleaseAll();
  absl::Status TruncateLog();
  void FlusherLoop();
  void StopFlusher();

  // The hot tier across restarts (hot_keys.cc). Saves the hot rows' keys
  // (not while a warm-up is under way: it would save part of the list).
  absl::Status SaveHotKeys();
  std::string HotKeysFile() const;
  void WarmUp();
  void StopWarmUp();

  // Memory backend snapshots (memory_snapshot.cc), every shard lock held.
  // Writes all rows (full) or the rows changed and deleted since the last
  // snapshot, and every writer's sequence; ends the epoch.
  absl::Status WriteMemorySnapshot(const std::string& path, bool full);
  absl::Status ApplyMemoryDelta(const std::string& path);

  const TableOptions o_;
  const uint64_t id_;  // PullPositions::table
  const CtrAccessor acc_;
  const uint32_t stride_;
  const std::unique_ptr<RowStore> store_;  // null for the memory backend
  uint64_t max_slots_;                     // per shard
  uint64_t round_copy_bytes_;  // budget of one write-back file's row copy
  std::deque<Shard> shards_;   // deque: Shard holds a mutex and cannot move
  std::atomic<uint64_t> evictions_{0}, rejected_{0}, unadmitted_{0},
      duplicates_{0}, shrunk_{0}, flushed_rows_{0};

  // Memory backend: the epoch the next snapshot ends (RowStore keeps the
  // RocksDB backend's). Changed with every shard lock held.
  std::atomic<uint64_t> memory_epoch_{1};

  std::unique_ptr<RedoLog> log_;  // redo log mode only
  std::thread flusher_;
  std::mutex flusher_mu_;
  std::condition_variable flusher_cv_;
  bool stop_ ABSL_GUARDED_BY(flusher_mu_) = false;
  bool flush_wanted_ ABSL_GUARDED_BY(flusher_mu_) = false;

  std::thread warm_up_;  // started by StartWarmUp, joined by StopWarmUp
  std::atomic<bool> stop_warm_up_{false};
  std::atomic<bool> warming_{false};  // a warm-up runs or was stopped early
};

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_SHARDED_TABLE_H_
