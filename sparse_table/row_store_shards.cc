// RowStore's shard key ranges (row_store.h): a shard's rows read, deleted
// and written as one range for shard moves, and the rewrite of rows from
// before shard prefixes.
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "rocksdb/sst_file_writer.h"
#include "sparse_table/row_store.h"

namespace sampan {

absl::Status RowStore::PrefixOldRows() {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db()->NewIterator(ro, cf_));
  it->Seek("r");
  if (!it->Valid() || !it->key().starts_with("r")) {
    return FromRocksStatus(it->status(), "scan rows");
  }
  SAMPAN_LOG(INFO) << dir_ << ": table '" << options_.table_name
                   << "': prefixing its rows with their shards";
  // Not synced batch by batch: the last write, which deletes the old rows,
  // is synced, and syncs the WAL before it. A crash before it leaves every
  // old row, and the next open writes the same rows again.
  rocksdb::WriteBatch batch;
  uint64_t rows = 0;
  for (; it->Valid() && it->key().starts_with("r"); it->Next()) {
    if (it->key().size() != 9) {
      return absl::DataLossError(
          absl::StrCat(dir_, ": table '", options_.table_name, "': a ",
                       it->key().size(), "-byte row key (expected 9)"));
    }
    uint64_t key = 0;
    for (int i = 1; i < 9; ++i) key = (key << 8) | uint8_t(it->key()[i]);
    batch.Put(cf_, RowKeyOf(key, options_.num_shards), it->value());
    ++rows;
    if (batch.Count() >= 4096) {
      if (absl::Status st = Write(&batch, false); !st.ok()) return st;
      batch.Clear();
    }
  }
  if (absl::Status st = FromRocksStatus(it->status(), "scan rows"); !st.ok()) {
    return st;
  }
  it.reset();
  batch.DeleteRange(cf_, "r", "s");
  if (absl::Status st = Write(&batch, true); !st.ok()) return st;
  SAMPAN_LOG(INFO) << dir_ << ": table '" << options_.table_name
                   << "': " << rows << " rows prefixed with their shards";
  return absl::OkStatus();
}

absl::Status RowStore::ForEachRowOfShard(
    uint32_t shard,
    const std::function<absl::Status(uint64_t, const float*, uint32_t)>& fn) {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;  // one pass over the shard: keep the cache's rows
  const std::string end = ShardKeyPrefix('s', shard + 1);
  rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db()->NewIterator(ro, cf_));
  std::vector<float> row;
  for (it->Seek(ShardKeyPrefix('s', shard)); it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key(), v = it->value();
    if (k.size() != 13 || v.size() < 4 || (v.size() - 4) % sizeof(float)) {
      return absl::DataLossError(absl::StrCat("malformed row record of shard ",
                                              shard, " (key ", k.size(),
                                              " bytes, value ", v.size(), ")"));
    }
    row.resize((v.size() - 4) / sizeof(float));
    std::memcpy(row.data(), v.data(), row.size() * sizeof(float));
    const uint64_t key = KeyOfRowKey(absl::string_view(k.data(), k.size()));
    if (absl::Status st = fn(key, row.data(), row.size()); !st.ok()) return st;
  }
  return FromRocksStatus(it->status(), "scan rows");
}

absl::StatusOr<uint64_t> RowStore::DeleteShard(uint32_t shard) {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  const rocksdb::Snapshot* snap = db()->GetSnapshot();
  ro.snapshot = snap;
  rocksdb::WriteBatch batch;
  // The shard's sequences: 'q' + BE32 shard + writer.
  const std::string sequences = ShardKeyPrefix('q', shard);
  std::unique_ptr<rocksdb::Iterator> it(db()->NewIterator(ro, cf_));
  for (it->Seek(sequences); it->Valid() && it->key().starts_with(sequences);
       it->Next()) {
    batch.Delete(cf_, it->key());
  }
  // Its rows: counted (the move reports them), then one range deletion.
  const std::string begin = ShardKeyPrefix('s', shard);
  const std::string end = ShardKeyPrefix('s', shard + 1);
  uint64_t rows = 0;
  for (it->Seek(begin); it->Valid() && it->key().starts_with(begin);
       it->Next()) {
    ++rows;
  }
  absl::Status st = FromRocksStatus(it->status(), "scan rows");
  it.reset();
  db()->ReleaseSnapshot(snap);
  if (!st.ok()) return st;
  // No range tombstone over a shard already empty (a new pserver's, where
  // most imports land): one in the memtable would make the import's
  // ingestion flush the memtable first, stalling the pserver's writes.
  if (rows > 0) batch.DeleteRange(cf_, begin, end);
  if (batch.Count() == 0) return rows;
  if (absl::Status w = Write(&batch, false); !w.ok()) return w;
  return rows;
}

std::unique_ptr<RowStore::ShardFile> RowStore::NewShardFile(uint32_t shard) {
  return std::unique_ptr<ShardFile>(new ShardFile(this, shard));
}

RowStore::ShardFile::ShardFile(RowStore* store, uint32_t shard)
    : store_(store), shard_(shard) {}

RowStore::ShardFile::~ShardFile() {
  std::error_code ec;
  if (writer_ != nullptr) std::filesystem::remove(path_, ec);
  for (const std::string& path : finished_) std::filesystem::remove(path, ec);
}

absl::Status RowStore::ShardFile::Add(uint64_t key, const float* row,
                                      uint32_t floats) {
  if (writer_ != nullptr && key <= last_key_) {
    if (absl::Status st = Finish(); !st.ok()) return st;
  }
  if (writer_ == nullptr) {
    path_ = store_->TempSstPath();
    writer_ = std::make_unique<rocksdb::SstFileWriter>(
        rocksdb::EnvOptions(), store_->sst_options_, store_->cf_);
    if (absl::Status st =
            FromRocksStatus(writer_->Open(path_), "open " + path_);
        !st.ok()) {
      return st;
    }
  }
  last_key_ = key;
  key_ = RowKey(shard_, key);
  const uint32_t epoch = store_->epoch_.load(std::memory_order_relaxed);
  value_.assign(reinterpret_cast<const char*>(row),
                size_t{floats} * sizeof(float));
  value_.append(reinterpret_cast<const char*>(&epoch), 4);
  return FromRocksStatus(writer_->Put(key_, value_), "write " + path_);
}

absl::Status RowStore::ShardFile::Finish() {
  absl::Status st =
      FromRocksStatus(writer_->Finish(), "finish " + path_);  // syncs
  writer_.reset();
  if (!st.ok()) return st;
  finished_.push_back(path_);
  return absl::OkStatus();
}

absl::Status RowStore::ShardFile::Ingest() {
  if (writer_ != nullptr) {
    if (absl::Status st = Finish(); !st.ok()) return st;
  }
  rocksdb::IngestExternalFileOptions io;
  io.move_files = true;          // a hard link: no copy
  io.allow_global_seqno = true;  // newer than the shard's emptying
  io.write_global_seqno = false;
  // One file at a time, oldest first: files of one import may overlap.
  for (const std::string& path : finished_) {
    absl::Status st = FromRocksStatus(
        store_->db()->IngestExternalFile(store_->cf_, {path}, io),
        "ingest " + path);
    std::error_code ec;
    std::filesystem::remove(path, ec);
    if (!st.ok()) return st;
  }
  finished_.clear();
  return absl::OkStatus();
}

}  // namespace sampan
