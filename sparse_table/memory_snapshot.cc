// ShardedTable's memory backend snapshots: a full snapshot is a delta file
// (snapshot_file.h, format in row_store.h) holding every row, in
// <dir>/<table>.snapshot; a delta holds the rows changed (pushed, created,
// shrunk, bulk loaded) and deleted since the last snapshot. Every snapshot
// ends an epoch, as RocksDB's do, so deltas apply only in order. Both are
// written with every shard lock held: pushes wait for the file (about
// 1 GB/s), which keeps the cut exact without copying the table.

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "sparse_table/sharded_table.h"
#include "sparse_table/snapshot_file.h"

namespace sampan {

std::string ShardedTable::MemorySnapshotFile(const std::string& dir) const {
  return absl::StrCat(dir, "/", o_.table_name, ".snapshot");
}

absl::Status ShardedTable::WriteMemorySnapshot(const std::string& path,
                                               bool full) {
  absl::StatusOr<std::unique_ptr<DeltaWriter>> w =
      DeltaWriter::Create(path, memory_epoch_.load(), RowLayoutCode(o_));
  if (!w.ok()) return w.status();
  for (uint32_t s = 0; s < shards_.size(); ++s) {
    Shard& sh = shards_[s];
    for (uint32_t slot = 0; slot < sh.slot_key.size(); ++slot) {
      const uint64_t key = sh.slot_key[slot];
      if (sh.index.Find(key) != slot) continue;  // a freed slot
      if (!full && sh.changed[slot] == 0) continue;
      const float* row = sh.rows[slot];
      (*w)->Row(key, row, acc_.stored_floats(row));
    }
    // A key deleted, then created again, is a row above: the row wins.
    for (uint64_t key : sh.deleted) {
      if (!full && sh.index.Find(key) == HashIndex::kEmpty) {
        (*w)->Deleted(key);
      }
    }
    for (const auto& [writer, seq] : sh.last_sequence) {
      (*w)->Sequence(writer, s, seq);
    }
  }
  if (absl::Status st = (*w)->Commit(); !st.ok()) return st;
  // Only a written snapshot ends the epoch; a failed one leaves the marks
  // for the next.
  for (Shard& sh : shards_) {
    std::fill(sh.changed.begin(), sh.changed.end(), 0);
    sh.deleted.clear();
  }
  memory_epoch_.fetch_add(1);
  return absl::OkStatus();
}

// Reads and checks the whole file before changing anything, so a bad file
// leaves the table as it was.
absl::Status ShardedTable::ApplyMemoryDelta(const std::string& path) {
  absl::StatusOr<std::unique_ptr<DeltaReader>> r = DeltaReader::Open(path);
  if (!r.ok()) return r.status();
  if (absl::Status st = CheckRowLayout(o_, (*r)->layout(), path); !st.ok()) {
    return st;
  }
  std::vector<DeltaRecord> records;
  std::vector<float> scratch(stride_);
  DeltaRecord rec;
  while ((*r)->Next(&rec)) {
    if (rec.type == kDeltaRow &&
        !acc_.Load(rec.floats.data(), rec.floats.size(), scratch.data())) {
      return absl::DataLossError(absl::StrCat(
          path, ": row of key ", rec.key, " has ", rec.floats.size(),
          " floats, not a layout of this table (embedding_dim changed?)"));
    }
    if (rec.type == kDeltaSequence && rec.shard >= shards_.size()) {
      return absl::DataLossError(absl::StrCat(
          path, ": sequence of shard ", rec.shard, ", the table has ",
          shards_.size(), " (num_shards changed?)"));
    }
    records.push_back(std::move(rec));
  }
  if (!(*r)->status().ok()) return (*r)->status();
  LockAll();
  absl::Status st;
  if ((*r)->epoch() != memory_epoch_.load()) {
    st = absl::FailedPreconditionError(absl::StrCat(
        path, " ends epoch ", (*r)->epoch(), " but the table is at ",
        memory_epoch_.load(), ": apply deltas in order"));
  }
  for (size_t i = 0; st.ok() && i < records.size(); ++i) {
    const DeltaRecord& d = records[i];
    if (d.type == kDeltaSequence) {
      shards_[d.shard].last_sequence[d.key] = d.sequence;
      continue;
    }
    Shard& sh = shards_[ShardOf(d.key, o_.num_shards)];
    if (d.type == kDeltaDeleted) {
      Remove(sh, d.key);
      continue;
    }
    float* row = Find(sh, d.key);
    if (row == nullptr) row = sh.rows[Insert(sh, d.key, true)];
    acc_.Load(d.floats.data(), d.floats.size(), row);
  }
  if (st.ok()) {
    // What the file holds is the snapshot's, not news for the next delta.
    for (Shard& sh : shards_) {
      std::fill(sh.changed.begin(), sh.changed.end(), 0);
      sh.deleted.clear();
    }
    memory_epoch_.store((*r)->epoch() + 1);
  }
  UnlockAll();
  return st;
}

absl::Status ShardedTable::LoadMemorySnapshot(const std::string& path) {
  absl::StatusOr<std::unique_ptr<DeltaReader>> r = DeltaReader::Open(path);
  if (!r.ok()) return r.status();
  memory_epoch_.store((*r)->epoch());
  return ApplyMemoryDelta(path);
}

}  // namespace sampan
