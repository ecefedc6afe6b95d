// A table larger than RAM, as a pserver holds one at 10^12 parameters:
// --rows rows of dim --dim bulk loaded (keys sorted, --chunk rows a call,
// each one SST file ingested: SparseTable::BulkLoad), then trained for
// --seconds by steps of a pull and a push of --batch keys drawn Zipf(0.99)
// over every row, with the hot tier at --budget_mb. One line of key=value:
//   build_rows_per_s, disk_bytes_per_row: the bulk load;
//   keys_per_s: pulled + pushed keys a second over the second half of the
//     run (the tier is full by then);
//   cold_share: the pulled keys the hot tier did not hold over that half
//     (each such key is read from RocksDB into the tier: rows added to the
//     tier plus rows evicted from it, per pulled key);
//   table_peak_rss_mb against budget_mb (rss_within_budget: at most 1.25x);
//   first5_keys_per_s: the same over the first 5 s, run_keys: pulled +
//     pushed keys over the whole run, and reach90_s: the
//     first whole second at >= 90% of keys_per_s (a restarted table's
//     climb; each second's rate is printed to stderr).
//   memory_bytes_per_row: the table's memory (rows and index) per row it
//     holds in memory, after the build (--row_format=fp32|fp16|int8);
// --case=memory runs the same steps on a memory table holding every row
// (the all-hot peer). --phase=build builds the table in --dir and exits;
// --phase=train trains on the table an earlier run built there, in a fresh
// process, as a restarted pserver would: its peak RSS is the serving
// footprint, not the bulk load's buffers. Single thread, like one trainer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "bench/bench_util.h"
#include "common/flags.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

// Bulk loads KeyOf(0..rows) in key order, `chunk` rows a call.
bool Build(SparseTable& t, uint64_t rows, uint64_t chunk) {
  std::vector<uint64_t> keys(rows);
  for (uint64_t r = 0; r < rows; ++r) keys[r] = KeyOf(r);
  std::sort(keys.begin(), keys.end());
  const uint32_t pd = t.pull_dim();
  std::vector<float> values(chunk * pd);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> init(-0.01f, 0.01f);
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t start = 0; start < rows; start += chunk) {
    const uint64_t n = std::min(chunk, rows - start);
    for (uint64_t i = 0; i < n * pd; ++i) values[i] = init(rng);
    if (absl::Status s =
            t.BulkLoad(absl::MakeConstSpan(&keys[start], n), values.data());
        !s.ok()) {
      std::fprintf(stderr, "BulkLoad: %s\n", s.ToString().c_str());
      return false;
    }
    std::fprintf(stderr, "\rbuilt %llu of %llu rows (%.0f rows/s)",
                 (unsigned long long)(start + n), (unsigned long long)rows,
                 (start + n) / Seconds(t0));
  }
  std::fprintf(stderr, "\n");
  return true;
}

struct Trained {
  double keys_per_s = 0, cold_share = 0;
  uint64_t steps = 0;
  std::vector<double> per_second;  // keys/s in each whole second
};

// Pull + push steps of Zipf keys for `seconds`; figures over the second half.
bool Train(SparseTable& t, uint64_t rows, int batch, double seconds,
           Trained* out) {
  Zipf zipf(rows, 0.99);
  std::mt19937_64 rng(42);
  const uint32_t pd = t.pull_dim();
  std::vector<uint64_t> keys(batch);
  std::vector<float> pulled(size_t(batch) * pd), grads(size_t(batch) * pd),
      shows(batch, 1), clicks(batch, 0);
  std::uniform_real_distribution<float> g(-0.001f, 0.001f);
  for (float& x : grads) x = g(rng);
  const auto t0 = std::chrono::steady_clock::now();
  bool half = false;
  uint64_t keys_at_half = 0, cold_at_half = 0, n = 0;
  auto cold = [&t] {  // rows read into the hot tier so far
    const TableStats s = t.Stats();
    return s.hot_rows + s.evictions;
  };
  double at_half = 0;
  uint64_t seq = 0, at_second = 0;
  while (true) {
    const double now = Seconds(t0);
    if (now >= out->per_second.size() + 1) {
      out->per_second.push_back(2.0 * (n - at_second));
      at_second = n;
      std::fprintf(stderr, "second %zu: %.0f keys/s\n", out->per_second.size(),
                   out->per_second.back());
    }
    if (now >= seconds) break;
    if (!half && now >= seconds / 2) {
      half = true;
      at_half = now;
      keys_at_half = n;
      cold_at_half = cold();
    }
    for (int i = 0; i < batch; ++i) keys[i] = KeyOf(zipf.Next(rng));
    if (!t.Pull(keys, true, pulled.data()).ok()) return false;
    PushBatch b{keys, grads.data(), shows.data(), clicks.data(), 1, ++seq};
    if (!t.Push(b).ok()) return false;
    n += keys.size();
    ++out->steps;
  }
  const uint64_t pulled_half = n - keys_at_half;
  out->keys_per_s = 2.0 * pulled_half / (Seconds(t0) - at_half);
  out->cold_share =
      pulled_half ? double(cold() - cold_at_half) / pulled_half : 0;
  return true;
}

int Main(int argc, char** argv) {
  auto flags = Flags::Parse(argc, argv, 1,
                            {"case", "rows", "dim", "budget_mb", "seconds",
                             "dir", "chunk", "batch", "phase", "row_format"});
  if (!flags.ok()) {
    std::fprintf(stderr, "%s\n", flags.status().ToString().c_str());
    return 2;
  }
  const std::string which = flags->Get("case", "rocksdb");
  const uint64_t rows = *flags->GetInt("rows", 125000000);
  const uint64_t chunk = *flags->GetInt("chunk", 2000000);
  const int batch = *flags->GetInt("batch", 4096);
  const double seconds = *flags->GetInt("seconds", 60);
  const uint64_t budget_mb = *flags->GetInt("budget_mb", 2048);
  const std::string phase = flags->Get("phase", "both");
  if (phase != "both" && phase != "build" && phase != "train") {
    std::fprintf(stderr, "--phase=both|build|train\n");
    return 2;
  }
  const bool reuse = phase == "train";
  TableOptions o;
  o.embedding_dim = *flags->GetInt("dim", 16);
  o.rule = OptimizerRule::kAdagrad;
  o.num_shards = 64;
  const std::optional<RowFormat> format =
      ParseRowFormat(flags->Get("row_format", "fp32"));
  if (!format.has_value()) {
    std::fprintf(stderr, "--row_format=fp32|fp16|int8\n");
    return 2;
  }
  o.row_format = *format;
  if (which == "rocksdb") {
    o.backend = Backend::kRocksDb;
    o.data_dir = flags->Get("dir", "/tmp/large_table_bench");
    if (!reuse) std::filesystem::remove_all(o.data_dir);
    o.hot_tier_bytes = budget_mb << 20;
  } else if (which != "memory") {
    std::fprintf(stderr, "--case=rocksdb|memory\n");
    return 2;
  }
  const long baseline_kb = RssKb();
  auto table = NewTable(o);
  if (!table.ok()) {
    std::fprintf(stderr, "%s\n", table.status().ToString().c_str());
    return 1;
  }
  SparseTable& t = **table;
  double build_rate = 0;
  if (!reuse) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!Build(t, rows, chunk) || !t.Flush().ok()) return 1;
    build_rate = rows / Seconds(t0);
  }
  const TableStats built = t.Stats();
  Trained trained;
  if (phase != "build" && !Train(t, rows, batch, seconds, &trained)) return 1;
  const double table_peak_mb = (PeakRssKb() - baseline_kb) / 1024.0;
  double first5 = 0, run_keys = 0;
  int reach90 = -1;
  for (size_t i = 0; i < trained.per_second.size(); ++i) {
    if (i < 5) first5 += trained.per_second[i] / 5;
    run_keys += trained.per_second[i];
    if (reach90 < 0 && trained.per_second[i] >= 0.9 * trained.keys_per_s) {
      reach90 = int(i) + 1;
    }
  }
  std::printf(
      "case=%s phase=%s row_format=%s rows=%llu dim=%u parameters=%.3g "
      "build_rows_per_s=%.0f memory_bytes_per_row=%.1f "
      "disk_bytes_per_row=%.1f keys_per_s=%.0f cold_share=%.3f steps=%llu "
      "budget_mb=%llu table_peak_rss_mb=%.0f peak_rss_mb=%.0f "
      "rss_within_budget=%d first5_keys_per_s=%.0f run_keys=%.0f "
      "reach90_s=%d\n",
      which.c_str(), phase.c_str(), flags->Get("row_format", "fp32").c_str(),
      (unsigned long long)rows, o.embedding_dim,
      double(rows) * (o.embedding_dim + 1), build_rate,
      double(built.memory_bytes) / std::max<uint64_t>(1, built.hot_rows),
      built.disk_bytes ? double(built.disk_bytes) / rows : 0.0,
      trained.keys_per_s, trained.cold_share, (unsigned long long)trained.steps,
      (unsigned long long)budget_mb, table_peak_mb, PeakRssKb() / 1024.0,
      which == "memory" || table_peak_mb <= 1.25 * budget_mb ? 1 : 0, first5,
      run_keys, reach90);
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) { return sampan::Main(argc, argv); }
