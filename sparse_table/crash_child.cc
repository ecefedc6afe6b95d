// Test helper for crash_test: pushes forever to a RocksDB table and prints
// each acknowledged sequence on its own line, flushed, so the parent knows
// exactly what was acknowledged when it SIGKILLs us.
//
//   crash_child DIR wal|sync WRITER FIRST_SEQUENCE [redo|rocksdb_wal]
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sparse_table/sparse_table.h"

namespace sampan {

// Shared with crash_test.cc: the keys push `seq` touches.
std::vector<uint64_t> CrashKeysOf(uint64_t seq) {
  std::vector<uint64_t> keys(64);
  for (uint64_t j = 0; j < keys.size(); ++j) keys[j] = (seq * 7 + j * 13) % 997;
  return keys;
}

int CrashChildMain(int argc, char** argv) {
  if (argc != 5 && argc != 6) return 2;
  TableOptions o;
  o.backend = Backend::kRocksDb;
  o.data_dir = argv[1];
  o.durability =
      std::string(argv[2]) == "sync" ? Durability::kSync : Durability::kWal;
  o.durability_log = argc == 6 && std::string(argv[5]) == "rocksdb_wal"
                         ? DurabilityLog::kRocksDbWal
                         : DurabilityLog::kRedoLog;
  if (argc == 6 && std::string(argv[5]) == "redo_memtable") {
    o.write_back = WriteBack::kMemtable;
  }
  o.flush_interval_ms = 5;  // flushes land between kills
  o.redo_log_bytes = 4096;  // and so do memtable flushes and log deletions
  o.num_shards = 8;
  o.embedding_dim = 0;
  o.rule = OptimizerRule::kSgd;
  o.learning_rate = 1;
  o.hot_tier_bytes = 1;  // evict constantly: reads come from RocksDB
  auto table = NewTable(o);
  if (!table.ok()) {
    std::fprintf(stderr, "open: %s\n", table.status().ToString().c_str());
    return 1;
  }
  const uint64_t writer = std::strtoull(argv[3], nullptr, 10);
  std::vector<float> grads(64, -1.0f), shows(64, 1), clicks(64, 0);
  for (uint64_t seq = std::strtoull(argv[4], nullptr, 10);; ++seq) {
    const std::vector<uint64_t> keys = CrashKeysOf(seq);
    PushBatch b;
    b.keys = keys;
    b.grads = grads.data();
    b.shows = shows.data();
    b.clicks = clicks.data();
    b.writer_id = writer;
    b.sequence = seq;
    if (!(*table)->Push(b).ok()) return 1;
    std::printf("%llu\n", static_cast<unsigned long long>(seq));
    std::fflush(stdout);
  }
}

}  // namespace sampan

int main(int argc, char** argv) { return sampan::CrashChildMain(argc, argv); }
