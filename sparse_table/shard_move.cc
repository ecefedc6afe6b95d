// ShardedTable's shard moves: export, import and drop of one shard
// (sparse_table.h; the protocol around them is in docs/architecture.md,
// "Moving a shard").
//
// Memory backend: the shard's arena is the data; export copies a chunk of
// rows at a time under the shard lock (pulls interleave), import writes rows
// into the arena, drop empties it. RocksDB backend: the data is the shard's key
// range of rows in the column family (row_store.h: 's' + shard + key, so
// each operation reads that range only) plus the 'q' sequences; the hot tier is
// a cache, emptied for the shard by import and drop. Redo log mode: export
// first writes the shard's dirty rows back; import and drop write the shard's
// cut past every logged record, so that recovery replays no older record onto
// it.

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/log.h"
#include "sparse_table/sharded_table.h"

namespace sampan {

class ShardedTable::Import final : public ShardImport {
 public:
  Import(ShardedTable* table, uint32_t shard)
      : t_(table),
        s_(shard),
        file_(table->store_ == nullptr ? nullptr
                                       : table->store_->NewShardFile(shard)) {}
  ~Import() override {
    file_.reset();  // its files, never ingested
    if (committed_) return;
    absl::StatusOr<uint64_t> emptied = t_->EmptyShard(s_, false);
    if (!emptied.ok()) {
      SAMPAN_LOG(ERROR) << "table " << t_->o_.table_name << ": emptying shard "
                        << s_ << " after an abandoned import: "
                        << emptied.status().message();
    }
  }

  absl::Status Add(const ShardChunk& chunk) override {
    if (absl::Status st = Usable(); !st.ok()) return st;
    absl::Status st = t_->AddImported(s_, chunk, file_.get());
    if (!st.ok()) {
      failed_ = true;
      return st;
    }
    rows_ += chunk.rows();
    for (const auto& [writer, sequence] : chunk.sequences) {
      uint64_t& mine = sequences_[writer];
      mine = std::max(mine, sequence);
    }
    return absl::OkStatus();
  }

  absl::Status Commit() override {
    if (absl::Status st = Usable(); !st.ok()) return st;
    absl::Status st = t_->CommitImport(s_, sequences_, file_.get());
    if (!st.ok()) {
      failed_ = true;
      return st;
    }
    committed_ = true;
    return absl::OkStatus();
  }

  uint64_t rows() const override { return rows_; }

 private:
  absl::Status Usable() const {
    if (committed_) {
      return absl::FailedPreconditionError(
          absl::StrCat("import of shard ", s_, " is committed already"));
    }
    if (failed_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "import of shard ", s_, " failed earlier; start it again"));
    }
    return absl::OkStatus();
  }

  ShardedTable* const t_;
  const uint32_t s_;
  bool failed_ = false, committed_ = false;
  uint64_t rows_ = 0;
  absl::flat_hash_map<uint64_t, uint64_t> sequences_;
  std::unique_ptr<RowStore::ShardFile> file_;  // RocksDB tables only
};

absl::Status ShardedTable::CheckShard(const char* op, uint32_t shard) const {
  if (shard >= o_.num_shards) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": shard ", shard, " out of range (table ",
                     o_.table_name, " has ", o_.num_shards, " shards)"));
  }
  return absl::OkStatus();
}

absl::Status ShardedTable::ExportShard(
    uint32_t s, size_t max_rows,
    const std::function<absl::Status(const ShardChunk&)>& sink) {
  if (absl::Status st = CheckShard("ExportShard", s); !st.ok()) return st;
  if (max_rows == 0) {
    return absl::InvalidArgumentError("ExportShard: max_rows must be >= 1");
  }
  if (store_ != nullptr) return ExportFromStore(s, max_rows, sink);
  Shard& sh = shards_[s];
  ShardChunk chunk;
  // Slot by slot, a chunk per lock hold: pulls of the shard go on between.
  // Without pushes no slot changes key; a training pull may add a row of
  // initial value, which the target would create identically.
  for (uint32_t slot = 0;;) {
    bool end;
    {
      std::lock_guard<std::mutex> lock(sh.mu);
      for (; slot < sh.slot_key.size() && chunk.rows() < max_rows; ++slot) {
        const uint64_t key = sh.slot_key[slot];
        if (sh.index.Find(key) != slot) continue;  // a freed slot
        const float* row = sh.rows[slot];
        const uint32_t n = acc_.stored_floats(row);
        chunk.keys.push_back(key);
        chunk.widths.push_back(n);
        chunk.floats.insert(chunk.floats.end(), row, row + n);
      }
      end = slot >= sh.slot_key.size();
      if (end) {
        chunk.sequences.assign(sh.last_sequence.begin(),
                               sh.last_sequence.end());
      }
    }
    if (absl::Status st = sink(chunk); !st.ok() || end) return st;
    chunk.Clear();
  }
}

absl::Status ShardedTable::ExportFromStore(
    uint32_t s, size_t max_rows,
    const std::function<absl::Status(const ShardChunk&)>& sink) {
  // Rows changed only in the hot tier (and the redo log) reach RocksDB
  // first; with pushes to the shard stopped, none changes after.
  if (log_ != nullptr) {
    if (absl::Status st = FlushShard(s); !st.ok()) return st;
  }
  ShardChunk chunk;
  std::vector<float> scratch(stride_);
  absl::Status st = store_->ForEachRowOfShard(
      s, [&](uint64_t key, const float* row, uint32_t n) {
        if (!acc_.Load(row, n, scratch.data())) {
          return absl::DataLossError(
              absl::StrCat("ExportShard: stored row of key ", key, " has ", n,
                           " floats, not a layout of table ", o_.table_name));
        }
        chunk.keys.push_back(key);
        chunk.widths.push_back(n);
        chunk.floats.insert(chunk.floats.end(), row, row + n);
        if (chunk.rows() < max_rows) return absl::OkStatus();
        absl::Status sent = sink(chunk);
        chunk.Clear();
        return sent;
      });
  if (!st.ok()) return st;
  {
    std::lock_guard<std::mutex> lock(shards_[s].mu);
    chunk.sequences.assign(shards_[s].last_sequence.begin(),
                           shards_[s].last_sequence.end());
  }
  return sink(chunk);
}

absl::StatusOr<std::unique_ptr<ShardImport>> ShardedTable::ImportShard(
    uint32_t s) {
  if (absl::Status st = CheckShard("ImportShard", s); !st.ok()) return st;
  absl::StatusOr<uint64_t> emptied = EmptyShard(s, false);
  if (!emptied.ok()) return emptied.status();
  return std::unique_ptr<ShardImport>(new Import(this, s));
}

absl::StatusOr<uint64_t> ShardedTable::DropShard(uint32_t s) {
  if (absl::Status st = CheckShard("DropShard", s); !st.ok()) return st;
  // Dirty rows first, so that the count includes them.
  if (log_ != nullptr) {
    if (absl::Status st = FlushShard(s); !st.ok()) return st;
  }
  return EmptyShard(s, o_.durability == Durability::kSync);
}

absl::StatusOr<uint64_t> ShardedTable::EmptyShard(uint32_t s, bool sync) {
  Shard& sh = shards_[s];
  uint64_t rows;
  {
    // flush_mu: no write-back of the shard's rows is under way, or starts
    // from rows dropped here.
    std::lock_guard<std::mutex> flushing(sh.flush_mu);
    std::lock_guard<std::mutex> lock(sh.mu);
    rows = sh.index.size();
    DropShardRows(sh);
    sh.last_sequence.clear();
  }
  if (store_ == nullptr) return rows;
  absl::StatusOr<uint64_t> deleted = store_->DeleteShard(s);
  if (!deleted.ok()) return deleted.status();
  rocksdb::WriteBatch wb;
  absl::StatusOr<uint64_t> cut = CutPastLog(s, &wb);
  if (!cut.ok()) return cut.status();
  if (absl::Status st = WriteDurably(&wb, sync); !st.ok()) return st;
  std::lock_guard<std::mutex> lock(sh.mu);
  if (log_ != nullptr) sh.applied_lsn = *cut;
  return *deleted;
}

absl::StatusOr<uint64_t> ShardedTable::CutPastLog(uint32_t s,
                                                  rocksdb::WriteBatch* wb) {
  if (log_ == nullptr) return 0;
  // As for a flush's cut (LogDurableThroughCuts): a cut at L promises the
  // log holds every record up to L, or LSNs would be reused after a crash.
  if (absl::Status st = LogDurableThroughCuts(); !st.ok()) return st;
  const uint64_t cut = log_->last_lsn();
  store_->PutShardLsn(wb, s, cut);
  return cut;
}

// A synced write syncs the WAL up to it, the rows of earlier unsynced
// batches included.
absl::Status ShardedTable::WriteDurably(rocksdb::WriteBatch* wb, bool sync) {
  if (wb->Count() > 0) return store_->Write(wb, sync);
  return sync ? store_->SyncWal() : absl::OkStatus();
}

// Checks the whole chunk before adding any of it.
absl::Status ShardedTable::AddImported(uint32_t s, const ShardChunk& chunk,
                                       RowStore::ShardFile* file) {
  if (chunk.widths.size() != chunk.keys.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ImportShard: chunk has ", chunk.keys.size(), " keys and ",
                     chunk.widths.size(), " row widths"));
  }
  std::vector<float> scratch(stride_);
  size_t at = 0;
  for (size_t i = 0; i < chunk.rows(); ++i) {
    const uint64_t key = chunk.keys[i];
    const uint32_t n = chunk.widths[i];
    if (ShardOf(key, o_.num_shards) != s) {
      return absl::InvalidArgumentError(
          absl::StrCat("ImportShard: row ", i, ": key ", key, " is in shard ",
                       ShardOf(key, o_.num_shards), ", not ", s));
    }
    if (n > chunk.floats.size() - at) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ImportShard: row ", i, " (key ", key, ") needs ", n,
          " floats, the chunk has ", chunk.floats.size() - at, " left"));
    }
    if (!acc_.Load(chunk.floats.data() + at, n, scratch.data())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ImportShard: row ", i, " (key ", key, ") has ", n, " floats; table ",
          o_.table_name, " stores ", acc_.base_floats(), " or ",
          acc_.full_floats(),
          " with the embedding flag set (embedding_dim or optimizer differ?)"));
    }
    at += n;
  }
  if (at != chunk.floats.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ImportShard: chunk has ", chunk.floats.size(),
                     " floats, its row widths add up to ", at));
  }
  if (file != nullptr) {
    // An export from RocksDB sends a shard's rows in key order: one file.
    at = 0;
    for (size_t i = 0; i < chunk.rows(); ++i) {
      absl::Status st =
          file->Add(chunk.keys[i], chunk.floats.data() + at, chunk.widths[i]);
      if (!st.ok()) return st;
      at += chunk.widths[i];
    }
    return absl::OkStatus();
  }
  Shard& sh = shards_[s];
  std::lock_guard<std::mutex> lock(sh.mu);
  at = 0;
  for (size_t i = 0; i < chunk.rows(); ++i) {
    uint32_t slot = sh.index.Find(chunk.keys[i]);
    if (slot == HashIndex::kEmpty) slot = Insert(sh, chunk.keys[i], true);
    acc_.Load(chunk.floats.data() + at, chunk.widths[i], sh.rows[slot]);
    sh.changed[slot] = 1;  // news for the next delta snapshot
    at += chunk.widths[i];
  }
  ++sh.version;
  return absl::OkStatus();
}

absl::Status ShardedTable::CommitImport(
    uint32_t s, const absl::flat_hash_map<uint64_t, uint64_t>& sequences,
    RowStore::ShardFile* file) {
  Shard& sh = shards_[s];
  uint64_t cut = 0;
  if (store_ != nullptr) {
    // The rows first: a crash between them and the sequences leaves an
    // import never committed, which the move starts again (from emptying).
    if (absl::Status st = file->Ingest(); !st.ok()) return st;
    rocksdb::WriteBatch wb;
    for (const auto& [writer, sequence] : sequences) {
      store_->PutSequence(&wb, s, writer, sequence);
    }
    absl::StatusOr<uint64_t> c = CutPastLog(s, &wb);
    if (!c.ok()) return c.status();
    cut = *c;
    absl::Status st = WriteDurably(&wb, o_.durability == Durability::kSync);
    if (!st.ok()) return st;
  }
  std::lock_guard<std::mutex> flushing(sh.flush_mu);
  std::lock_guard<std::mutex> lock(sh.mu);
  // Rows a pull cached meanwhile may predate the import's.
  if (store_ != nullptr) DropShardRows(sh);
  sh.last_sequence.clear();
  sh.last_sequence.insert(sequences.begin(), sequences.end());
  if (log_ != nullptr) sh.applied_lsn = cut;
  return absl::OkStatus();
}

}  // namespace sampan
