// ShardedTable's whole-table operations (shrink, snapshots, bulk load,
// stats) and the factories.

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/log.h"
#include "sparse_table/sharded_table.h"

namespace sampan {

absl::StatusOr<ShrinkResult> ShardedTable::Shrink() {
  // Redo log: every row in RocksDB first, since the rewrite reads it there.
  absl::Status st = PersistAndLockAll();
  if (!st.ok()) {
    ReleaseAll();
    return st;
  }
  uint64_t deleted = 0, rows = 0;
  if (store_ == nullptr) {
    for (Shard& sh : shards_) {
      std::vector<uint64_t> doomed;
      // Live slots are the ones the index finds (freed ones are not).
      for (uint32_t slot = 0; slot < sh.slot_key.size(); ++slot) {
        const uint64_t key = sh.slot_key[slot];
        if (sh.index.Find(key) != slot) continue;
        if (acc_.Shrink(sh.rows[slot])) doomed.push_back(key);
        sh.changed[slot] = 1;  // decayed and aged
      }
      for (uint64_t key : doomed) Remove(sh, key);
      deleted += doomed.size();
      rows += sh.index.size();
    }
  } else {
    std::vector<float> row(stride_);
    st = store_->RewriteRows([&](uint64_t key, const float* stored, uint32_t n,
                                 rocksdb::WriteBatch* wb) {
      if (!acc_.Load(stored, n, row.data())) {
        ++rows;  // left for repair
        return;
      }
      if (acc_.Shrink(row.data())) {
        store_->DeleteRow(wb, key);
        ++deleted;
      } else {
        store_->PutRow(wb, key, row.data(), acc_.stored_floats(row.data()));
        ++rows;
      }
    });
    ClearHot();  // a cache: drop it rather than shrink it twice
  }
  ReleaseAll();
  shrunk_.fetch_add(deleted, std::memory_order_relaxed);
  if (!st.ok()) return st;
  return ShrinkResult{deleted, rows};
}

absl::Status ShardedTable::Snapshot(const std::string& dir) {
  if (!store_) {
    std::error_code ec;
    if (std::filesystem::exists(MemorySnapshotFile(dir), ec)) {
      return absl::AlreadyExistsError(MemorySnapshotFile(dir));
    }
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("create ", dir, ": ", ec.message()));
    }
    LockAll();
    absl::Status st = WriteMemorySnapshot(MemorySnapshotFile(dir), true);
    UnlockAll();
    return st;
  }
  absl::Status st = PersistAndLockAll();
  if (st.ok()) st = store_->Checkpoint(dir);
  ReleaseAll();
  // A restart after a crash warms the tier with the keys as of here.
  if (absl::Status saved = SaveHotKeys(); st.ok() && !saved.ok()) {
    SAMPAN_LOG(WARNING) << "table " << o_.table_name
                        << ": hot keys not saved: " << saved.message();
  }
  return st;
}

absl::Status ShardedTable::DeltaSnapshot(const std::string& path) {
  if (!store_) {
    LockAll();
    absl::Status st = WriteMemorySnapshot(path, false);
    UnlockAll();
    return st;
  }
  absl::Status st = PersistAndLockAll();
  absl::StatusOr<RowStore::DeltaToken> token =
      st.ok() ? store_->BeginDelta() : st;
  ReleaseAll();
  if (!token.ok()) return token.status();
  return store_->WriteDelta(path, *token);
}

absl::Status ShardedTable::ApplyDelta(const std::string& path) {
  if (!store_) return ApplyMemoryDelta(path);
  absl::Status st = PersistAndLockAll();
  if (st.ok()) st = store_->ApplyDelta(path);
  if (st.ok()) st = LoadSequences();
  if (st.ok()) ClearHot();
  ReleaseAll();
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
  absl::Status st = PersistAndLockAll();
  if (!st.ok()) {
    ReleaseAll();
    return st;
  }
  if (store_ == nullptr) {
    for (auto& [key, row] : rows) {
      Shard& sh = shards_[ShardOf(key, o_.num_shards)];
      float* dst = Find(sh, key);
      if (dst == nullptr) dst = sh.rows[Insert(sh, key, true)];
      sh.changed[sh.index.Find(key)] = 1;
      std::memcpy(dst, row.data(), stride_ * sizeof(float));
    }
  } else {
    for (auto& [key, row] : rows) row.resize(acc_.stored_floats(row.data()));
    st = store_->Ingest(std::move(rows));
    ClearHot();
  }
  ReleaseAll();
  return st;
}

TableStats ShardedTable::Stats() const {
  TableStats stats;
  for (const Shard& sh : shards_) {
    std::lock_guard<std::mutex> lock(sh.mu);
    stats.hot_rows += sh.index.size();
    stats.memory_bytes += sh.rows.bytes() + sh.slot_key.bytes() +
                          sh.index.bytes() + sh.referenced.capacity() +
                          sh.free_slots.capacity() * 4 + sh.state.capacity() +
                          sh.changed.capacity() + sh.deleted.capacity() * 8 +
                          sh.admission.memory_bytes();
    stats.dirty_rows += sh.unclean;
  }
  stats.redo_log_bytes = log_ ? log_->disk_bytes() : 0;
  stats.rows = store_ ? store_->EstimateRows() : stats.hot_rows;
  stats.disk_bytes = store_ ? store_->DiskBytes() : 0;
  stats.evictions = evictions_.load();
  stats.rejected_keys = rejected_.load();
  stats.unadmitted_keys = unadmitted_.load();
  stats.duplicate_keys = duplicates_.load();
  stats.shrunk_rows = shrunk_.load();
  return stats;
}

std::unique_ptr<SparseTable> NewMemoryTable(const TableOptions& options) {
  return std::make_unique<ShardedTable>(options, nullptr);
}

absl::StatusOr<std::unique_ptr<SparseTable>> NewRocksDbTable(
    const TableOptions& options) {
  absl::StatusOr<std::unique_ptr<RowStore>> store = RowStore::Open(options);
  if (!store.ok()) return store.status();
  auto table = std::make_unique<ShardedTable>(options, *std::move(store));
  if (absl::Status st = table->LoadSequences(); !st.ok()) return st;
  // A log left by an earlier redo-log run is replayed whatever the mode now.
  std::error_code ec;
  const bool redo = options.durability_log == DurabilityLog::kRedoLog;
  if (redo || std::filesystem::exists(table->RedoLogDir(), ec)) {
    if (absl::Status st = table->OpenRedoLog(); !st.ok()) return st;
  }
  if (!redo && table->has_redo_log()) {
    if (absl::Status st = table->CloseRedoLog(); !st.ok()) return st;
  }
  table->StartWarmUp();
  return std::unique_ptr<SparseTable>(std::move(table));
}

absl::StatusOr<std::unique_ptr<SparseTable>> NewTable(
    const TableOptions& options) {
  if (options.num_shards == 0) {
    return absl::InvalidArgumentError("num_shards must be at least 1");
  }
  if (options.backend == Backend::kRocksDb) return NewRocksDbTable(options);
  auto table = std::make_unique<ShardedTable>(options, nullptr);
  // A snapshot RestoreSnapshot put in data_dir is the table's content.
  std::error_code ec;
  const std::string snapshot = table->MemorySnapshotFile(options.data_dir);
  if (!options.data_dir.empty() && std::filesystem::exists(snapshot, ec)) {
    if (absl::Status st = table->LoadMemorySnapshot(snapshot); !st.ok()) {
      return st;
    }
  }
  return table;
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
