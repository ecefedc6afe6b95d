#include "sparse_table/shard_move_testlib.h"

#include "absl/strings/str_cat.h"

namespace sampan {

std::vector<MoveMode> AllMoveModes() {
  return {
      {"Memory", Backend::kMemory, DurabilityLog::kRocksDbWal,
       WriteBack::kSstFile},
      {"RocksDbWal", Backend::kRocksDb, DurabilityLog::kRocksDbWal,
       WriteBack::kSstFile},
      {"RedoSst", Backend::kRocksDb, DurabilityLog::kRedoLog,
       WriteBack::kSstFile},
      {"RedoMemtable", Backend::kRocksDb, DurabilityLog::kRedoLog,
       WriteBack::kMemtable},
  };
}

MoveMode MoveModeNamed(const std::string& name) {
  for (const MoveMode& m : AllMoveModes()) {
    if (name == m.name) return m;
  }
  return AllMoveModes()[0];
}

TableOptions MoveTableOptions(const MoveMode& mode, const std::string& dir) {
  TableOptions o;
  o.num_shards = kMoveShards;
  o.embedding_dim = kMoveDim;
  o.rule = OptimizerRule::kAdagrad;
  o.embedx_threshold = 0.5f;
  o.backend = mode.backend;
  o.data_dir = mode.backend == Backend::kRocksDb ? dir : "";
  o.durability_log = mode.log;
  o.write_back = mode.write_back;
  o.flush_interval_ms = 1000000;
  return o;
}

std::vector<uint64_t> MoveKeys(int n) {
  std::vector<uint64_t> keys;
  for (int i = 0; i < n; ++i) keys.push_back(uint64_t(i) * 7919 + 1);
  return keys;
}

absl::StatusOr<PushResult> PushRounds(SparseTable& table, uint64_t writer,
                                      uint64_t first, int rounds,
                                      const std::vector<uint64_t>& keys) {
  const uint32_t pd = table.pull_dim();
  PushResult sum;
  for (int r = 0; r < rounds; ++r) {
    std::vector<float> grads(keys.size() * pd), shows(keys.size(), 1),
        clicks(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      clicks[i] = i % 2;
      for (uint32_t j = 0; j < pd; ++j) {
        grads[i * pd + j] = 0.01f * float((keys[i] + j + r) % 17) - 0.08f;
      }
    }
    PushBatch b;
    b.keys = keys;
    b.grads = grads.data();
    b.shows = shows.data();
    b.clicks = clicks.data();
    b.writer_id = writer;
    b.sequence = first + r;
    absl::StatusOr<PushResult> pushed = table.Push(b);
    if (!pushed.ok()) return pushed.status();
    sum.applied_keys += pushed->applied_keys;
    sum.duplicate_keys += pushed->duplicate_keys;
  }
  return sum;
}

absl::StatusOr<ShardContent> ExportAll(SparseTable& table, uint32_t shard,
                                       size_t max_rows) {
  ShardContent content;
  absl::Status st =
      table.ExportShard(shard, max_rows, [&](const ShardChunk& chunk) {
        ++content.chunks;
        if (chunk.rows() > max_rows) {
          return absl::InternalError(absl::StrCat(
              "chunk of ", chunk.rows(), " rows, asked at most ", max_rows));
        }
        size_t at = 0;
        for (size_t i = 0; i < chunk.rows(); ++i) {
          content.rows[chunk.keys[i]].assign(
              chunk.floats.begin() + at,
              chunk.floats.begin() + at + chunk.widths[i]);
          at += chunk.widths[i];
        }
        for (const auto& [writer, seq] : chunk.sequences) {
          content.sequences[writer] = seq;
        }
        return absl::OkStatus();
      });
  if (!st.ok()) return st;
  return content;
}

absl::Status MoveShard(SparseTable& from, SparseTable& to, uint32_t shard,
                       size_t max_rows) {
  absl::StatusOr<std::unique_ptr<ShardImport>> import = to.ImportShard(shard);
  if (!import.ok()) return import.status();
  absl::Status st = from.ExportShard(
      shard, max_rows,
      [&](const ShardChunk& chunk) { return (*import)->Add(chunk); });
  if (!st.ok()) return st;
  return (*import)->Commit();
}

}  // namespace sampan
