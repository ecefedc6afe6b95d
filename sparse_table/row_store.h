// RowStore: one table's rows in RocksDB. Tables of one pserver share one
// database (one directory) and each owns a column family. Inside it:
//
//   'e'                              -> current epoch (LE32)
//   'q' + BE32 shard + BE64 writer   -> last applied push sequence (LE64)
//   's' + BE32 shard + BE64 key      -> the row's stored floats (accessor
//                                       layout, little-endian float32)
//                                       followed by the LE32 epoch it was
//                                       last written in
//   'x' + big-endian key             -> LE32 epoch a shrink deleted it in
//   'm'                              -> the rows' layout (LE32
//                                       RowLayoutCode, accessor.h)
//   'n'                              -> the table's number of shards (LE32),
//                                       fixed for its life
//   'l' + BE32 shard                 -> redo log mode: the LSN of the last
//                                       log record the shard's stored rows
//                                       and sequences include (LE64)
//
// A shard's rows are one key range (shard = ShardOf(key, num_shards)), so a
// shard move reads and deletes that range, not the whole table. Tables
// written before rows were prefixed by shard ('r' + BE64 key) are rewritten
// so when they are opened (RowStore::Open; a crash midway leaves the old
// rows, and the next open rewrites again).
//
// Epochs order snapshots: every snapshot (full or delta) ends an epoch, so
// a delta holds the rows and deletions stamped with the epoch it ends.
//
// Delta file format (version 2, all little-endian; snapshot_file.h):
//   header   "SMPDELTA" | u32 version | u32 row layout | u64 epoch it ends
//   record*  u8 type | u64 key | payload
//              type 1 row:      u32 n | n x f32 (stored floats)
//              type 2 deleted:  nothing
//              type 3 sequence: u32 shard | u64 sequence (key = writer)
//   trailer  u8 0 | u64 number of records | u32 masked CRC-32C of every
//            byte before it (version 1 files, without it, still read)
// The row layout (RowLayoutCode) was a reserved 0 before row formats; such
// files still read into FP32 tables. Records are in no particular order; a
// key has at most one row or
// deletion. The memory backend's full snapshots are the same format.
// RocksDB WAL mode: a push is written as one WriteBatch holding its changed
// rows and the sequences of the shards it touched, so both reach the WAL
// atomically. Redo log mode: a flush round is one ingested SST file of the
// shards' dirty rows, sequences and LSNs (IngestRound), or, writing back
// through the memtable, one WriteBatch per shard without the WAL (the redo
// log has them until FlushMemtable puts them in files).
//
// Thread-safe (RocksDB is); callers order writes to the same row themselves.
#ifndef SAMPAN_SPARSE_TABLE_ROW_STORE_H_
#define SAMPAN_SPARSE_TABLE_ROW_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "sparse_table/sparse_table.h"

namespace rocksdb {
class Cache;
class SstFileWriter;
}  // namespace rocksdb

namespace sampan {

struct SharedDb;

// RowStore's RocksDB layout and tuning as free functions, for a read-only
// copy of rows that keeps the same key encoding and budget rules
// (serving/row_store.h).
//
// 's' + BE32 shard + BE64 key: a row's RocksDB key (orders by shard, then
// by key). A store that is not split by shard (serving's) passes shard 0.
std::string RowKey(uint32_t shard, uint64_t key);
// The key of row `key` of a table of `num_shards` shards.
std::string RowKeyOf(uint64_t key, uint32_t num_shards);
// `tag` + BE32 shard: where one shard's rows ('s') or sequences ('q') begin.
std::string ShardKeyPrefix(char tag, uint32_t shard);
// 'q' + BE32 shard + BE64 writer: the key of a writer's exactly-once
// sequence in a shard.
std::string SequenceKey(uint32_t shard, uint64_t writer);
// The row key's table key; `row_key` is 13 bytes.
uint64_t KeyOfRowKey(absl::string_view row_key);
// The options of a column family of rows under `o`'s memory budget
// (TableOptions::hot_tier_bytes: two memtables of an eighth of it each;
// block_cache_bytes for the block cache), with Bloom filters and without
// compression. `block_cache`, when set, is used instead of a cache of its
// own, so that several column families share one budget.
rocksdb::ColumnFamilyOptions RowColumnFamilyOptions(
    const TableOptions& o,
    std::shared_ptr<rocksdb::Cache> block_cache = nullptr);
// Reads the rows of `keys` (of a table of `num_shards` shards) from `cf` in
// chunks (few data blocks pinned at a time) and calls fn(i, value) for each
// key found, value being its stored floats without the 4-byte trailer that
// follows them. `sorted`: the keys are in their row keys' order (ascending,
// with one shard; RocksDB then skips sorting each chunk). DataLoss for a
// value shorter than its trailer; RocksDB's errors otherwise.
absl::Status MultiGetRows(
    rocksdb::DB* db, const rocksdb::ReadOptions& ro,
    rocksdb::ColumnFamilyHandle* cf, uint32_t num_shards,
    absl::Span<const uint64_t> keys,
    const std::function<void(size_t, absl::string_view)>& fn,
    bool sorted = false);
// A RocksDB status as absl's: IOError -> Unavailable, Corruption -> DataLoss,
// InvalidArgument as it is, others Internal; `what` leads the message.
absl::Status FromRocksStatus(const rocksdb::Status& s, absl::string_view what);

class RowStore {
 public:
  static absl::StatusOr<std::unique_ptr<RowStore>> Open(const TableOptions& o);
  ~RowStore();

  // values[i] holds key i's stored floats, or is empty when absent.
  absl::Status MultiGet(absl::Span<const uint64_t> keys,
                        std::vector<std::string>* values);
  absl::StatusOr<bool> Get(uint64_t key, std::string* value);

  void PutRow(rocksdb::WriteBatch* batch, uint64_t key, const float* row,
              uint32_t floats);
  void DeleteRow(rocksdb::WriteBatch* batch, uint64_t key);
  void PutSequence(rocksdb::WriteBatch* batch, uint32_t shard, uint64_t writer,
                   uint64_t sequence);
  void PutShardLsn(rocksdb::WriteBatch* batch, uint32_t shard, uint64_t lsn);
  // Writes with the table's durability (sync or not); WAL always on.
  absl::Status Write(rocksdb::WriteBatch* batch);
  // Writes to the memtable only (no WAL): lost in a crash until
  // FlushMemtable, which writes the table's memtable to files and waits.
  absl::Status WriteUnlogged(rocksdb::WriteBatch* batch);
  absl::Status FlushMemtable();

  // Redo log write-back as a file: one flush round's rows (any number of
  // shards), with each shard's cut (LSN) and writer sequences, written as
  // one SST file and ingested, so that RocksDB has all of it or none of it
  // even across a crash, without a memtable insert per row.
  struct RowRef {
    uint64_t key;
    const float* row;
    uint32_t floats;
  };
  struct SstRound {
    std::vector<std::pair<uint32_t, uint64_t>> lsns;  // (shard, LSN)
    struct Sequence {
      uint32_t shard;
      uint64_t writer, sequence;
    };
    std::vector<Sequence> sequences;
    std::vector<RowRef> rows;  // keys unique
  };
  // Sorts the round and ingests it; durable (file and MANIFEST synced) on
  // return. An empty round writes nothing.
  absl::Status IngestRound(SstRound* round);

  // Calls fn for every recorded (shard, writer, sequence).
  absl::Status ForEachSequence(
      const std::function<void(uint32_t, uint64_t, uint64_t)>& fn);
  // Calls fn for every recorded (shard, LSN) (redo log mode).
  absl::Status ForEachShardLsn(
      const std::function<void(uint32_t, uint64_t)>& fn);
  // Calls fn(key, floats, n) for every row, in key order, from a consistent
  // view; fn's writes into the batch are committed every few thousand rows.
  absl::Status RewriteRows(
      const std::function<void(uint64_t, const float*, uint32_t,
                               rocksdb::WriteBatch*)>& fn);

  absl::Status SyncWal();

  // Shard moves (sparse_table.h ExportShard). Each reads the shard's key
  // range only.
  //
  // Calls fn(key, stored floats, n) for every row of `shard`, in key order,
  // from one consistent view; stops at fn's first error and returns it.
  absl::Status ForEachRowOfShard(
      uint32_t shard,
      const std::function<absl::Status(uint64_t, const float*, uint32_t)>& fn);
  // Deletes every row (one range deletion) and writer sequence of `shard` in
  // one WriteBatch through the WAL, not synced (a later synced write syncs
  // it). No deletion marker: the rows move, they are not shrunk. Returns the
  // rows deleted.
  absl::StatusOr<uint64_t> DeleteShard(uint32_t shard);

  // A shard's rows streamed into SST files and ingested (a shard import):
  // no write through the WAL and memtable per row. Rows added in ascending
  // key order go into one file; a key at or below the last one starts
  // another. Nothing is visible until Ingest, which makes every file added
  // durable (file and MANIFEST synced). Files not ingested are deleted with
  // the writer. Not thread-safe; the store outlives it.
  class ShardFile {
   public:
    ~ShardFile();
    absl::Status Add(uint64_t key, const float* row, uint32_t floats);
    absl::Status Ingest();

   private:
    friend class RowStore;
    ShardFile(RowStore* store, uint32_t shard);
    absl::Status Finish();

    RowStore* const store_;
    const uint32_t shard_;
    std::unique_ptr<rocksdb::SstFileWriter> writer_;  // null: none open
    std::string path_;
    std::vector<std::string> finished_;  // paths, oldest first
    uint64_t last_key_ = 0;
    std::string key_, value_;
  };
  std::unique_ptr<ShardFile> NewShardFile(uint32_t shard);
  // Write with the WAL, synced or not whatever the table's durability.
  absl::Status Write(rocksdb::WriteBatch* batch, bool sync);

  // Snapshots. The caller keeps every write out while these run (the table
  // holds all its shard locks), except WriteDelta, which reads a RocksDB
  // snapshot BeginDelta took.
  uint32_t epoch() const { return epoch_.load(); }
  // Ends the epoch, then checkpoints the database into `dir`.
  absl::Status Checkpoint(const std::string& dir);
  struct DeltaToken {
    uint32_t epoch = 0;  // the epoch the delta ends
    const rocksdb::Snapshot* snapshot = nullptr;
  };
  absl::StatusOr<DeltaToken> BeginDelta();
  // Writes the delta file and releases the token's snapshot.
  absl::Status WriteDelta(const std::string& path, DeltaToken token);
  // Ingests a delta file (as one SST file) and resumes at the epoch after it.
  // FailedPrecondition unless it ends the epoch this store is in.
  absl::Status ApplyDelta(const std::string& path);
  // Ingests rows (key, stored floats) as one SST file; keys unique.
  absl::Status Ingest(
      std::vector<std::pair<uint64_t, std::vector<float>>> rows);

  uint64_t EstimateRows() const;
  uint64_t DiskBytes() const;

 private:
  RowStore(std::shared_ptr<SharedDb> db, rocksdb::ColumnFamilyHandle* cf,
           bool sync, std::string dir, const TableOptions& o);
  std::string TempSstPath();
  rocksdb::DB* db() const;
  absl::Status PutEpoch(uint32_t epoch);
  // Records the table's row layout and shard count on first open;
  // FailedPrecondition when the table holds another ('m', 'n').
  absl::Status CheckLayout();
  // Rewrites rows keyed without their shard ('r' + key, before shard
  // prefixes) under their row keys, then deletes them.
  absl::Status PrefixOldRows();
  absl::Status IngestSst(std::vector<std::pair<std::string, std::string>>& puts,
                         const std::vector<std::string>& deletes);

  // Options SstFileWriter builds files with: the column family's (Bloom
  // filters, no compression).
  rocksdb::Options sst_options_;
  std::atomic<uint64_t> next_file_{0};
  std::shared_ptr<SharedDb> shared_;
  rocksdb::ColumnFamilyHandle* const cf_;  // owned by shared_
  const bool sync_;
  // Row reads: fill the block cache only when it was sized on purpose
  // (TableOptions::block_cache_bytes).
  rocksdb::ReadOptions row_reads_;
  std::atomic<uint32_t> epoch_{1};
  const uint32_t layout_;  // RowLayoutCode of the table's options
  const TableOptions options_;
  const std::string dir_;
  const std::string tmp_dir_;  // <dir>/ingest-<table>
};

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_ROW_STORE_H_
