// sparse_table throughput and footprint, one case per process so that peak
// RSS belongs to that case alone. Prints one line of key=value pairs;
// bench/sparse_table_bench.sh runs every case side by side with db_bench and
// reports medians.
//
//   sparse_table_bench --case=hashmap|memory|hot|cold --dim=16 --rows=1000000
//                      [--batch=4096 --batches=200 --dir=/tmp/stb]
//                      [--log=redo|redo_memtable|rocksdb_wal]
//                      [--durability=wal|sync] [--settle_seconds=0]
//
// --log picks the RocksDB backend's durability log (redo_memtable: the redo
// log writing back through the memtable, not SST files). Durable push figures:
// push_rows_per_s is the ack rate of one pushing thread;
// push_sustained_rows_per_s also counts the final Flush that writes the
// dirty rows to RocksDB (redo log); push_cpu_rows_per_s divides the rows by
// the process's CPU seconds over that span: rows per second of one core's
// worth of work. pull_push_rows_per_s (a trainer step) is sustained too.
//
// Keys: rank r of a Zipf(0.99) draw over --rows keys maps to Fmix64(r + 1),
// so hot keys spread over shards as feature signs do. Single thread.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "bench/bench_util.h"
#include "common/flags.h"
#include "common/hash.h"
#include "sparse_table/accessor.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

struct Workload {
  std::vector<std::vector<uint64_t>> zipf, uniform;  // batches of keys
};

Workload MakeWorkload(uint64_t rows, int batch, int batches) {
  Workload w;
  Zipf zipf(rows, 0.99);
  std::mt19937_64 rng(42);
  for (int b = 0; b < batches; ++b) {
    w.zipf.emplace_back(batch);
    w.uniform.emplace_back(batch);
    for (int i = 0; i < batch; ++i) {
      w.zipf.back()[i] = KeyOf(zipf.Next(rng));
      w.uniform.back()[i] = KeyOf(rng() % rows);
    }
  }
  return w;
}

// The memory limit: gather rows of pull_dim floats from a flat_hash_map
// index into an arena.
void HashMapCase(uint32_t pd, uint64_t rows, const Workload& w) {
  absl::flat_hash_map<uint64_t, uint32_t> index;
  std::vector<float> arena(rows * pd, 0.5f);
  for (uint64_t r = 0; r < rows; ++r) index[KeyOf(r)] = r;
  std::vector<float> out(w.zipf[0].size() * pd);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t n = 0;
  for (const auto& keys : w.zipf) {
    for (size_t i = 0; i < keys.size(); ++i) {
      const uint32_t r = index.find(keys[i])->second;
      std::copy_n(&arena[size_t{r} * pd], pd, &out[i * pd]);
    }
    n += keys.size();
  }
  std::printf("gather_rows_per_s=%.0f checksum=%g\n", n / Seconds(t0), out[0]);
}

// Pushes every key once (fills the table), in batches.
bool Fill(SparseTable& t, uint64_t rows, int batch, uint64_t* seq) {
  std::vector<float> grads(size_t(batch) * t.pull_dim(), 0.01f),
      shows(batch, 1), clicks(batch, 0);
  for (uint64_t r = 0; r < rows; r += batch) {
    std::vector<uint64_t> keys;
    for (uint64_t k = r; k < std::min<uint64_t>(rows, r + batch); ++k) {
      keys.push_back(KeyOf(k));
    }
    PushBatch b{keys, grads.data(), shows.data(), clicks.data(), 1, ++*seq};
    if (!t.Push(b).ok()) return false;
  }
  return true;
}

double PullRate(SparseTable& t,
                const std::vector<std::vector<uint64_t>>& batches) {
  std::vector<float> out(batches[0].size() * t.pull_dim());
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t n = 0;
  for (const auto& keys : batches) {
    if (!t.Pull(keys, true, out.data()).ok()) return -1;
    n += keys.size();
  }
  return n / Seconds(t0);
}

struct PushRates {
  double acked = -1;      // rows/s of acknowledged pushes
  double sustained = -1;  // rows/s over the pushes plus a final Flush
  double per_cpu = -1;    // rows per CPU second of the process, same span
};

// with_pull: a trainer's step, pull then push the same keys. Starts from a
// flushed table, so no earlier phase's background writes land in this one.
PushRates PushRate(SparseTable& t,
                   const std::vector<std::vector<uint64_t>>& batches,
                   uint64_t* seq, bool with_pull) {
  PushRates r;
  const size_t batch = batches[0].size();
  std::vector<float> grads(batch * t.pull_dim(), 0.001f), shows(batch, 1),
      clicks(batch, 0), out(batch * t.pull_dim());
  if (!t.Flush().ok()) return r;
  const double cpu0 = CpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t n = 0;
  for (const auto& keys : batches) {
    if (with_pull && !t.Pull(keys, true, out.data()).ok()) return r;
    PushBatch b{keys, grads.data(), shows.data(), clicks.data(), 1, ++*seq};
    if (!t.Push(b).ok()) return r;
    n += keys.size();
  }
  r.acked = n / Seconds(t0);
  if (!t.Flush().ok()) return r;
  r.sustained = n / Seconds(t0);
  r.per_cpu = n / (CpuSeconds() - cpu0);
  return r;
}

int Main(int argc, char** argv) {
  auto flags = Flags::Parse(argc, argv, 1,
                            {"case", "dim", "rows", "batch", "batches", "dir",
                             "log", "durability", "settle_seconds"});
  if (!flags.ok()) {
    std::fprintf(stderr, "%s\n", flags.status().ToString().c_str());
    return 2;
  }
  const std::string which = flags->Get("case", "memory");
  const uint32_t dim = *flags->GetInt("dim", 16);
  const uint64_t rows = *flags->GetInt("rows", 1000000);
  const int batch = *flags->GetInt("batch", 4096);
  const int batches = *flags->GetInt("batches", 200);
  const int settle_seconds = *flags->GetInt("settle_seconds", 0);
  const Workload w = MakeWorkload(rows, batch, batches);

  TableOptions o;
  o.embedding_dim = dim;
  o.rule = OptimizerRule::kAdagrad;
  const CtrAccessor acc(o);
  const uint64_t value_bytes = acc.full_floats() * sizeof(float);
  // What RocksDB stores per row: key, floats, epoch stamp.
  const uint64_t table_bytes = rows * (9 + value_bytes + 4);
  std::printf("case=%s dim=%u rows=%llu value_bytes=%llu ", which.c_str(), dim,
              (unsigned long long)rows, (unsigned long long)value_bytes);
  if (which == "hashmap") {
    HashMapCase(acc.pull_dim(), rows, w);
    return 0;
  }
  if (which != "memory") {
    o.backend = Backend::kRocksDb;
    o.data_dir = flags->Get("dir", "/tmp/sparse_table_bench");
    std::filesystem::remove_all(o.data_dir);
    o.hot_tier_bytes = which == "hot" ? 8 * table_bytes : table_bytes / 4;
    const std::string log = flags->Get("log", "redo");
    o.durability_log = log == "rocksdb_wal" ? DurabilityLog::kRocksDbWal
                                            : DurabilityLog::kRedoLog;
    // redo_memtable: the redo log writing back through the memtable.
    o.write_back =
        log == "redo_memtable" ? WriteBack::kMemtable : WriteBack::kSstFile;
    o.durability = flags->Get("durability", "wal") == "sync" ? Durability::kSync
                                                             : Durability::kWal;
    std::printf("log=%s durability=%s ", log.c_str(),
                o.durability == Durability::kSync ? "sync" : "wal");
  }
  // What the process holds before the table exists (binary, libraries, the
  // key batches): peak_rss_mb minus this is the table's own footprint.
  const long baseline_kb = RssKb();
  auto table = NewTable(o);
  if (!table.ok()) return 1;
  SparseTable& t = **table;
  uint64_t seq = 0;
  if (!Fill(t, rows, batch, &seq) || !t.Flush().ok()) return 1;
  const double pull = PullRate(t, w.zipf);
  const PushRates push = PushRate(t, w.zipf, &seq, false);
  const PushRates step = PushRate(t, w.zipf, &seq, true);
  std::printf(
      "pull_rows_per_s=%.0f push_rows_per_s=%.0f "
      "push_sustained_rows_per_s=%.0f push_cpu_rows_per_s=%.0f "
      "pull_push_rows_per_s=%.0f ",
      pull, push.acked, push.sustained, push.per_cpu, step.sustained);
  if (which == "memory") {
    const TableStats s = t.Stats();
    std::printf("bytes_per_row=%.1f\n", double(s.memory_bytes) / s.rows);
  } else {
    // --settle_seconds: let the compactions of the phases above finish
    // first, so the cold pull measures reads, not reads beside compaction.
    std::this_thread::sleep_for(std::chrono::seconds(settle_seconds));
    const double cold = PullRate(t, w.uniform);
    std::printf(
        "uniform_pull_rows_per_s=%.0f budget_mb=%.1f "
        "table_mb=%.1f peak_rss_mb=%.1f baseline_rss_mb=%.1f "
        "table_peak_rss_mb=%.1f evictions=%llu\n",
        cold, o.hot_tier_bytes / 1048576.0, table_bytes / 1048576.0,
        PeakRssKb() / 1024.0, baseline_kb / 1024.0,
        (PeakRssKb() - baseline_kb) / 1024.0,
        (unsigned long long)t.Stats().evictions);
    table->reset();
    std::filesystem::remove_all(o.data_dir);
  }
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) { return sampan::Main(argc, argv); }
