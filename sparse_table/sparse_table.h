// sparse_table: the embedding rows a parameter server hosts.
//
// A SparseTable maps feature signs (common/hash.h) to rows whose layout the
// CTR accessor (accessor.h) owns: show/click statistics, unseen age, the
// first-order weight w, the embedding v[dim] (created only once the key's
// score passes a threshold) and their optimizer state. Pull returns only what
// the model reads, [w, v[0..dim)], so pull_dim() == 1 + dim.
//
// Thread safety: all methods may be called concurrently. Keys are spread over
// shards by ShardOf(); each shard has its own lock, taken once per request.
//
// Durability: the memory backend keeps nothing across restarts. The RocksDB
// backend logs every push before Push returns, so an acknowledged push
// survives a process crash (kWal) or a machine crash (kSync: shown under a
// simulated power cut that loses everything not fsynced,
// tests/durability_crash_test.sh), and a replayed push changes nothing. Where
// it is logged (DurabilityLog): in RocksDB's write-ahead log as one WriteBatch
// of the changed rows plus the writer's sequence per shard; or as one record of
// the push itself in the table's redo log, the rows reaching RocksDB later in
// the background (and being recovered from the log after a crash).
#ifndef SAMPAN_SPARSE_TABLE_SPARSE_TABLE_H_
#define SAMPAN_SPARSE_TABLE_SPARSE_TABLE_H_

#include <cfloat>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/row_format.h"

namespace sampan {

enum class OptimizerRule { kSgd, kAdagrad, kAdam, kFtrl };
enum class Backend { kMemory, kRocksDb };
enum class Durability {
  kWal,   // in the log (OS page cache) before the ack: survives a crash of
          // the process; a machine crash loses pushes not yet written back
  kSync,  // the log fsynced before the ack: survives a machine crash; slower
};
enum class DurabilityLog {
  kRocksDbWal,  // each push is one RocksDB WriteBatch through its WAL
  kRedoLog,     // each push is one record in our log (<data_dir>/redo-<table>);
                // dirty rows are written to RocksDB in the background
};
enum class WriteBack {
  kSstFile,   // each flush round of dirty rows is written as one sorted SST
              // file and ingested (no memtable insert per row)
  kMemtable,  // each shard's dirty rows go into RocksDB's memtable as one
              // WriteBatch without its WAL, flushed to files later
};
enum class NonFinitePolicy {
  kRejectBatch,  // a NaN/Inf gradient fails the whole push; nothing applied
  kSkipKey,      // only the keys with NaN/Inf gradients are skipped
};

struct TableOptions {
  // --- Shape ---
  // Total shards of the table (the same on every pserver).
  uint32_t num_shards = 64;
  // Width of the embedding v; 0 gives a logistic-regression table (w only).
  uint32_t embedding_dim = 8;
  // Storage of v: float32, float16, or int8 with a float32 scale per row
  // (about a quarter of FP32's bytes for v). Fixed for the life of a table:
  // opening a table, snapshot or delta of another layout (format, dim,
  // rule) fails. Pulls return float32 whatever the format.
  RowFormat row_format = RowFormat::kFp32;
  Rounding rounding = Rounding::kStochastic;

  // --- Storage ---
  Backend backend = Backend::kMemory;
  // RocksDB: the pserver's database directory (one DB per pserver).
  std::string data_dir;
  // RocksDB: the column family holding this table.
  std::string table_name = "table0";
  // RocksDB: the table's memory budget. Half holds decoded hot rows (past
  // it, rows are dropped from memory only: RocksDB already has them), up to
  // a quarter RocksDB's memtables, an eighth the copy of dirty rows one
  // write-back file is written from; the last eighth is headroom for what
  // RocksDB holds outside its caches (SST index and filter blocks,
  // compaction buffers).
  uint64_t hot_tier_bytes = 256ull << 20;
  Durability durability = Durability::kWal;
  DurabilityLog durability_log = DurabilityLog::kRedoLog;
  // Redo log: dirty rows reach RocksDB at least this often.
  uint32_t flush_interval_ms = 500;
  // Redo log: how dirty rows are written back to RocksDB.
  WriteBack write_back = WriteBack::kSstFile;
  // Redo log: past this many bytes of log, RocksDB writes its memtable to
  // files and the log below the flushed rows is deleted. Bounds recovery.
  uint64_t redo_log_bytes = 256ull << 20;
  // RocksDB: a block cache that row reads fill, on top of the budget. 0 =
  // none to speak of (1 MiB, not filled by row reads): the hot tier already
  // caches decoded rows, and a cached 4 KiB block holds one cold ~100-byte
  // row for 40x its size.
  uint64_t block_cache_bytes = 0;

  // --- Optimizer rule, applied per row ---
  OptimizerRule rule = OptimizerRule::kAdagrad;
  float learning_rate = 0.05f;
  // Adagrad's starting squared-gradient sum of w, and of v. v's gradients
  // are far smaller than w's; a large start keeps v from taking early steps
  // near learning_rate / sqrt(start) that fit noise (PaddlePaddle's CTR
  // accessor likewise has an initial_g2sum each for embed and embedx).
  float initial_accumulator = 1.0f;
  float embedding_initial_accumulator = 1000.0f;
  // New embeddings start uniform in [-init_range, init_range], seeded by the
  // key, so that a row is created identically on every run.
  float init_range = 0.01f;
  // L2 penalty: added to every gradient (SGD, Adagrad, Adam); FTRL's L2.
  float l2 = 0.0f;
  // FTRL's L1 (sparsity) and beta.
  float l1 = 0.0f;
  float ftrl_beta = 1.0f;
  // Adam's moment decay rates and epsilon.
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  // Weights are clamped to [min_weight, max_weight] after every update.
  float min_weight = -FLT_MAX;
  float max_weight = FLT_MAX;
  NonFinitePolicy non_finite = NonFinitePolicy::kRejectBatch;

  // --- CTR accessor ---
  // score = (show - click) * nonclk_coeff + click * click_coeff.
  float nonclk_coeff = 0.1f;
  float click_coeff = 1.0f;
  // The embedding v is created once score >= embedx_threshold; until then a
  // pull reads zeros for v and v's gradients are ignored. 0 = at creation.
  float embedx_threshold = 0.0f;
  // Shrink: show and click are multiplied by show_decay_rate, unseen age
  // grows by one; then rows with score < delete_threshold or unseen age >
  // delete_after_unseen_days are deleted.
  float show_decay_rate = 0.98f;
  float delete_threshold = 0.0f;
  uint32_t delete_after_unseen_days = 30;

  // --- Admission (keys not admitted have no row and read as zeros) ---
  // A key gets a row on its admit_after_pushes-th push (0 or 1 = first).
  // Counted in a count-min sketch of 8-bit counters (4 bytes per counter
  // row), not in rows.
  uint32_t admit_after_pushes = 0;
  // Counters per shard per hash row of the sketch.
  uint32_t sketch_width = 1 << 14;
  // Each push of a key without a row admits it with this probability.
  float admit_probability = 1.0f;
};

// Where a Pull found its keys' rows, so that a Push of the same keys in the
// same order (PushBatch::positions) skips finding them again: a local
// trainer pulls and pushes every batch's keys in its in-process table.
// Filled by the memory backend's Pull only (the RocksDB one leaves it
// empty). A Push uses them only in the table and for the key sequence they
// were taken for (a 64-bit fingerprint of it), and a position only while its
// shard has removed no row since the pull and the slot still holds that key;
// otherwise it looks the key up as usual. So stale or foreign positions
// cost time, not a wrong row. The fields are the table's; callers only hand
// them back.
struct PullPositions {
  uint64_t table = 0;  // which table took them (an id unique per process)
  size_t num_keys = 0;
  uint64_t keys_fingerprint = 0;      // of the key sequence, order included
  std::vector<uint32_t> group_shard;  // shards ascending
  std::vector<uint32_t> group_end;    // end of each group's run in `order`
  std::vector<uint64_t> group_epoch;  // its shard's removal epoch then
  std::vector<uint32_t> order;        // key indices, grouped by shard
  std::vector<uint32_t> slot;         // per key index; ~0u for none

  // Empties them, keeping the vectors' memory for the next batch.
  void Clear() {
    table = 0;
    num_keys = 0;
    keys_fingerprint = 0;
    group_shard.clear();
    group_end.clear();
    group_epoch.clear();
    order.clear();
    slot.clear();
  }
};

// One push: keys.size() gradient rows of pull_dim() floats, and per-key
// impressions and clicks. The arrays are borrowed for the call only.
struct PushBatch {
  absl::Span<const uint64_t> keys;
  const float* grads = nullptr;
  const float* shows = nullptr;
  const float* clicks = nullptr;
  // Identifies the writer (a trainer incarnation); sequence 0 = untracked.
  uint64_t writer_id = 0;
  uint64_t sequence = 0;
  // Optional: what a Pull of these keys recorded (PullPositions).
  const PullPositions* positions = nullptr;
};

struct PushResult {
  uint64_t applied_keys = 0;
  // Keys skipped because their shard had already applied this sequence.
  uint64_t duplicate_keys = 0;
  // Keys skipped because admission has not admitted them yet.
  uint64_t unadmitted_keys = 0;
  // Keys skipped for NaN/Inf gradients (NonFinitePolicy::kSkipKey).
  uint64_t rejected_keys = 0;
};

struct ShrinkResult {
  uint64_t deleted_rows = 0;
  // Rows the table holds after the shrink (exact, unlike TableStats::rows
  // of a RocksDB table).
  uint64_t rows = 0;
};

struct TableStats {
  // Rows in memory (memory backend) or an estimate of rows in RocksDB.
  uint64_t rows = 0;
  // Bytes of rows and indexes in memory (the hot tier for RocksDB).
  uint64_t memory_bytes = 0;
  uint64_t hot_rows = 0;
  // RocksDB: SST + memtable bytes of this table's column family.
  uint64_t disk_bytes = 0;
  uint64_t evictions = 0;        // rows dropped from the hot tier
  uint64_t rejected_keys = 0;    // NaN/Inf gradient rows refused
  uint64_t unadmitted_keys = 0;  // pushed keys not (yet) admitted
  uint64_t duplicate_keys = 0;   // keys of replayed pushes
  uint64_t shrunk_rows = 0;      // rows deleted by Shrink
  // Redo log: hot rows changed but not yet in RocksDB; bytes of log files.
  uint64_t dirty_rows = 0;
  uint64_t redo_log_bytes = 0;
};

// A piece of one shard in transit between tables (ExportShard, ShardImport):
// rows with their complete stored state (the accessor's stored floats: w, v,
// optimizer state, show, click, unseen age) and the shard's exactly-once
// state. Row i is keys[i] with widths[i] floats taken in order from
// `floats` (a row without its embedding yet is stored shorter, accessor.h).
struct ShardChunk {
  std::vector<uint64_t> keys;
  std::vector<uint32_t> widths;
  std::vector<float> floats;
  // (writer id, last sequence the shard applied for it). ExportShard puts
  // every writer of the shard in its last chunk; an import takes them from
  // any chunk.
  std::vector<std::pair<uint64_t, uint64_t>> sequences;

  size_t rows() const { return keys.size(); }
  void Clear() {
    keys.clear();
    widths.clear();
    floats.clear();
    sequences.clear();
  }
};

// An import of one shard in progress (SparseTable::ImportShard). Not
// thread-safe; must not outlive its table.
class ShardImport {
 public:
  // Abandoned without a successful Commit: the shard is left empty (its rows
  // and sequences deleted, as DropShard does), best effort.
  virtual ~ShardImport() = default;
  // Adds the chunk's rows and sequences. InvalidArgument, naming the row, for
  // a malformed chunk (widths and floats disagree), a row width that is not
  // one of this table's layouts, or a key of another shard; nothing of that
  // chunk is added and the import can only be abandoned.
  virtual absl::Status Add(const ShardChunk& chunk) = 0;
  // Makes the shard exactly what was added: durable as a push is (the
  // table's Durability) when it returns OK. FailedPrecondition after a failed
  // Add or a second Commit.
  virtual absl::Status Commit() = 0;
  // Rows added so far.
  virtual uint64_t rows() const = 0;
};

class SparseTable {
 public:
  virtual ~SparseTable() = default;

  // Floats per key returned by Pull and expected by Push.
  virtual uint32_t pull_dim() const = 0;
  // How rows store v (TableOptions::row_format); a pull may send them so
  // (common/ps_wire.h).
  virtual RowFormat row_format() const { return RowFormat::kFp32; }

  // Writes keys.size() * pull_dim() floats to `out`, in key order. A key
  // without a row reads as its initial value when `is_training` and
  // admission is off (the row is created), and as zeros otherwise. Fails
  // only on a storage error (RocksDB); `out` is then unspecified.
  virtual absl::Status Pull(absl::Span<const uint64_t> keys, bool is_training,
                            float* out) = 0;
  // The same, recording where each row is for a Push of the same keys
  // (PullPositions); backends that keep no positions leave it empty.
  virtual absl::Status Pull(absl::Span<const uint64_t> keys, bool is_training,
                            float* out, PullPositions* positions) {
    positions->Clear();
    return Pull(keys, is_training, out);
  }

  // Pull, when every row is in memory (always for the memory backend; the
  // RocksDB backend: every key in the hot tier): returns true with `out`
  // written as Pull writes it. Returns false, having created no row, when a
  // key would be read from RocksDB; `out` is then unspecified. Never does
  // I/O, so it may run on a thread that must not block (gRPC's).
  virtual bool PullIfInMemory(absl::Span<const uint64_t> keys, bool is_training,
                              float* out) = 0;

  // Applies one gradient row (pull_dim() floats) per key and adds `shows`
  // and `clicks` (one per key) to the row's statistics, creating admitted
  // rows. Exactly once: when batch.sequence > 0, each shard the batch touches
  // applies it only if the sequence is above the last one it applied for
  // batch.writer_id, and records it atomically with the rows it changed; a
  // replay changes nothing. Shards apply a push one after another (memory
  // backend) or one run of shards after another (RocksDB backend, pushes of
  // over 4,096 keys), so a concurrent Pull or snapshot may see some of its
  // shards applied and not others; a retry completes it on the rest. Writers
  // send their pushes in sequence order. InvalidArgument on a NaN/Inf gradient
  // under kRejectBatch (nothing is applied). On a storage error nothing of this
  // push is acknowledged; the writer retries it with the same sequence.
  virtual absl::StatusOr<PushResult> Push(const PushBatch& batch) = 0;

  // Decays statistics, ages every row by one day and deletes rows whose
  // score or age crosses the thresholds (TableOptions: show_decay_rate,
  // delete_threshold, delete_after_unseen_days). Holds every shard's lock
  // throughout, so pulls and pushes wait for it. Returns the rows deleted
  // and the rows left. On a storage error (RocksDB) some rows may already
  // be shrunk: a second call would age those twice.
  virtual absl::StatusOr<ShrinkResult> Shrink() = 0;

  // Makes everything acknowledged durable on disk even under kWal (fsyncs
  // the log; with the redo log also writes dirty rows to RocksDB). No-op
  // for the memory backend.
  virtual absl::Status Flush() = 0;

  // Snapshots. Each snapshot ends an epoch; pushes wait while one starts
  // (memory backend: while it is written).
  //
  // Full: RocksDB, a self-contained copy of the whole pserver database (hard
  // links where possible) in `dir`, which must not exist; memory, the file
  // <dir>/<table_name>.snapshot of every row and sequence (AlreadyExists if
  // there). Restore it with RestoreSnapshot into the table's data_dir (a
  // memory table opened by NewTable loads the file it finds there), then
  // ApplyDelta the deltas taken after it, in order.
  virtual absl::Status Snapshot(const std::string& dir) = 0;
  // Delta: the rows changed and deleted since the previous snapshot (full or
  // delta) and every writer's sequence, in the file `path` (format in
  // row_store.h). Pushes continue while the file is written.
  virtual absl::Status DeltaSnapshot(const std::string& path) = 0;
  // Applies a delta file: FailedPrecondition unless it directly follows the
  // table's last snapshot or applied delta.
  virtual absl::Status ApplyDelta(const std::string& path) = 0;
  // Loads rows in bulk (replacing existing ones): per key pull_dim() floats
  // [w, v] as Pull returns them; statistics and optimizer state start fresh.
  // RocksDB: written as one SST file and ingested, bypassing the WAL.
  virtual absl::Status BulkLoad(absl::Span<const uint64_t> keys,
                                const float* values) = 0;

  virtual TableStats Stats() const = 0;

  // Moving a shard between tables (pserver/pserver.h; docs/architecture.md
  // "Moving a shard"). The caller runs at most one of these per shard at a
  // time, pushes nothing to the shard meanwhile (a pull may run), and runs no
  // Shrink, snapshot or delta concurrently with them. Keys are stored by key,
  // not by shard, so on RocksDB each scans the whole table's rows (one
  // sequential pass) to find the shard's. InvalidArgument for a shard out of
  // range. The memory backend moves rows exactly as the RocksDB ones do.
  //
  // Export: calls sink with chunks of at most max_rows rows (>= 1) holding
  // every row of the shard with its stored state (rows changed only in the
  // redo log's hot tier included: they are written back first), then the
  // shard's writer sequences in the last chunk (which may hold no row). The
  // chunks are a consistent cut as long as no push reaches the shard. A
  // sink error stops the export and is returned.
  virtual absl::Status ExportShard(
      uint32_t shard, size_t max_rows,
      const std::function<absl::Status(const ShardChunk&)>& sink) {
    return absl::UnimplementedError("ExportShard");
  }
  // Import: empties the shard (rows, sequences, hot-tier rows) and returns
  // the import that fills it (ShardImport); on RocksDB rows go in through
  // WriteBatches (WAL on, so a crash after Commit keeps them). After Commit a
  // push replayed with a sequence the exporting table had applied for the
  // shard is a duplicate.
  virtual absl::StatusOr<std::unique_ptr<ShardImport>> ImportShard(
      uint32_t shard) {
    return absl::UnimplementedError("ImportShard");
  }
  // Deletes the shard's rows, sequences and hot-tier rows, durably as a push
  // is; returns the rows deleted. Not a shrink: no deletion marker is
  // written, so deltas taken later do not carry the keys as deleted (they
  // live on in the table the shard moved to).
  virtual absl::StatusOr<uint64_t> DropShard(uint32_t shard) {
    return absl::UnimplementedError("DropShard");
  }
};

// An in-memory table.
std::unique_ptr<SparseTable> NewMemoryTable(const TableOptions& options);

// Opens (creating if missing) the table options.table_name in the RocksDB
// database at options.data_dir. Tables of one directory share the database.
absl::StatusOr<std::unique_ptr<SparseTable>> NewRocksDbTable(
    const TableOptions& options);

// Picks the backend options.backend names.
absl::StatusOr<std::unique_ptr<SparseTable>> NewTable(
    const TableOptions& options);

// Replaces the database directory `data_dir` (no table may have it open)
// with a copy of the snapshot in `snapshot_dir`.
absl::Status RestoreSnapshot(const std::string& snapshot_dir,
                             const std::string& data_dir);

// The keys with key % parts == part of the rows of table `table_name` in the
// RocksDB full snapshot `snapshot_dir` (what Snapshot wrote, e.g. a
// checkpoint's pserver-<i>), ascending. Opens it read-only and writes
// nothing into it, so a verified checkpoint stays verified; the snapshot
// must not change meanwhile. The error names the directory.
absl::StatusOr<std::vector<uint64_t>> SnapshotKeys(
    const std::string& snapshot_dir, const std::string& table_name,
    uint32_t part, uint32_t parts);

// Checks the row layout a RocksDB table in options.data_dir already holds
// and its shard count against `options` (format, dim, rule, num_shards;
// FailedPrecondition naming both, as opening it would), reading the database
// without opening it for writing: so a job whose config no longer fits its
// tables is refused before any process starts. A memory table: the full
// snapshot it would load from its data_dir. OK where there is no database,
// table or snapshot yet.
absl::Status CheckTableLayout(const TableOptions& options);

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_SPARSE_TABLE_H_
