#include "sparse_table/crash_testlib.h"

namespace sampan {

TableOptions CrashOptions(const std::string& dir, const std::string& variant,
                          bool sync) {
  TableOptions o;
  o.backend = Backend::kRocksDb;
  o.data_dir = dir;
  o.durability = sync ? Durability::kSync : Durability::kWal;
  o.durability_log = variant.rfind("rocksdb_wal", 0) == 0
                         ? DurabilityLog::kRocksDbWal
                         : DurabilityLog::kRedoLog;
  if (variant == "redo_memtable") o.write_back = WriteBack::kMemtable;
  o.flush_interval_ms = 5;  // flushes land between kills
  o.redo_log_bytes = 4096;  // and so do memtable flushes and log deletions
  o.num_shards = 8;
  o.embedding_dim = 0;
  if (variant.find("int8") != std::string::npos) {
    o.embedding_dim = 4;
    o.row_format = RowFormat::kInt8;
  } else if (variant.find("fp16") != std::string::npos) {
    o.embedding_dim = 4;
    o.row_format = RowFormat::kFp16;
  }
  o.rule = OptimizerRule::kSgd;
  o.learning_rate = 1;
  o.hot_tier_bytes = 1;  // evict constantly: reads come from RocksDB
  return o;
}

std::vector<uint64_t> CrashKeysOf(uint64_t seq) {
  std::vector<uint64_t> keys(64);
  for (uint64_t j = 0; j < keys.size(); ++j) {
    keys[j] = (seq * 7 + j * 13) % kCrashKeySpace;
  }
  return keys;
}

std::vector<float> CrashGradsOf(uint64_t seq, uint32_t pull_dim) {
  std::vector<float> grads(64 * pull_dim);
  for (size_t i = 0; i < 64; ++i) {
    grads[i * pull_dim] = -1;
    for (uint32_t j = 1; j < pull_dim; ++j) {
      grads[i * pull_dim + j] = 0.001f * float((seq + i * j) % 7) - 0.003f;
    }
  }
  return grads;
}

}  // namespace sampan
