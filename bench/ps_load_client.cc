// One load-generating client for bench/ps_load.sh, or the in-process peer.
//
// Each step draws --batch unique Zipf-distributed keys, pulls them (training
// pull), and pushes one gradient row per key asynchronously, like a trainer
// with its model cost removed. Runs for --seconds, optionally paced to
// --target_keys_per_sec, and prints one line:
//   keys_pulled=N keys_pushed=N seconds=S p50_ms=.. p99_ms=.. p999_ms=..
//   cpu_s=.. push_requests=N
// push_requests counts the push RPCs the client sent (0 in-process): the
// queue merges steps' gradients while a push is in flight.
// cpu_s is this process's CPU time (all threads) in the timed loop only, so
// that the setup (the Zipf table) does not count against the RPC path.
// --mode=inprocess drives a table in this process with the same loop (no
// RPC): the ceiling the RPC path is compared with; with --data_dir its
// table is RocksDB-backed (WAL durability, --durability_log) like the
// pservers'. It hands each pull's PullPositions to its push, as a local
// trainer does; --positions=0 makes the push look every key up again;
// --row_format=FP32|FP16|INT8 is its table's.
// --latency_trace=FILE writes one line per pull, "start_ms latency_ms" (the
// start in Unix milliseconds), to tell a stall (slow pulls in one window) from
// a tail spread over the run.
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/flags.h"
#include "sparse_table/sparse_table.h"
#include "trainer/client/ps_client.h"

namespace sampan {
namespace {

// Zipf(s) over [0, n) by inverse CDF on a precomputed table.
class Zipf {
 public:
  Zipf(uint64_t n, double s, uint64_t seed) : rng_(seed) {
    cdf_.reserve(n);
    double sum = 0;
    for (uint64_t i = 1; i <= n; ++i) cdf_.push_back(sum += std::pow(i, -s));
    for (double& c : cdf_) c /= sum;
  }
  uint64_t Next() {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    return std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin();
  }

 private:
  std::vector<double> cdf_;
  std::mt19937_64 rng_;
};

// CPU seconds (user + system) of this process so far.
double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

int Run(const Flags& flags) {
  const int batch = *flags.GetInt("batch", 4096);
  const int dim = *flags.GetInt("dim", 16);
  const double seconds = *flags.GetInt("seconds", 10);
  const double target = *flags.GetInt("target_keys_per_sec", 0);
  const bool inprocess = flags.Get("mode", "rpc") == "inprocess";
  const bool use_positions = flags.Get("positions", "1") != "0";
  const uint32_t shards = *flags.GetInt("num_shards", 64);
  Zipf zipf(*flags.GetInt("key_space", 10000000), 1.05,
            *flags.GetInt("seed", 1));

  std::unique_ptr<PsClient> client;
  std::unique_ptr<SparseTable> table;
  if (inprocess) {
    TableOptions t;
    t.num_shards = shards;
    t.embedding_dim = dim - 1;  // pull_dim = 1 + embedding_dim
    const std::optional<RowFormat> format =
        ParseRowFormat(flags.Get("row_format", "FP32"));
    if (!format.has_value()) {
      std::fprintf(stderr, "--row_format=FP32|FP16|INT8\n");
      return 2;
    }
    t.row_format = *format;
    if (flags.Has("data_dir")) {  // the same RocksDB setup a pserver has
      t.backend = Backend::kRocksDb;
      t.data_dir = flags.Get("data_dir");
      t.hot_tier_bytes = 1ull << 30;
      t.durability_log =
          flags.Get("durability_log", "REDO_LOG") == "ROCKSDB_WAL"
              ? DurabilityLog::kRocksDbWal
              : DurabilityLog::kRedoLog;
    }
    auto made = NewTable(t);
    if (!made.ok()) return 1;
    table = std::move(*made);
  } else {
    PsClientOptions o;
    o.shard_map =
        InitialShardMap(shards, absl::StrSplit(flags.Get("pservers"), ','));
    o.row_dim = dim;
    o.writer_id = std::random_device{}();
    client = PsClient::Create(o);
  }

  // Batches are drawn before the clock starts and then cycled, so that the
  // generator's cost (a binary search per key) is not measured as the
  // system's.
  std::vector<std::vector<uint64_t>> batches(*flags.GetInt("batches", 64));
  for (std::vector<uint64_t>& keys : batches) {
    absl::flat_hash_set<uint64_t> seen;
    while (keys.size() < static_cast<size_t>(batch)) {
      const uint64_t k = zipf.Next() * 0x9e3779b97f4a7c15ULL + 1;
      if (seen.insert(k).second) keys.push_back(k);
    }
  }
  std::vector<float> rows(size_t(batch) * dim),
      grads(size_t(batch) * dim, 0.001f), ones(batch, 1.0f), zeros(batch, 0.0f);
  std::vector<double> latencies_ms, starts_ms;
  PullPositions positions;
  uint64_t pulled = 0, pushed = 0;
  const double cpu_start = CpuSeconds();
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(seconds);
  for (size_t step = 0; absl::Now() < end; ++step) {
    const std::vector<uint64_t>& keys = batches[step % batches.size()];
    const absl::Time t0 = absl::Now();
    absl::Status s;
    if (inprocess) {
      s = table->Pull(keys, true, rows.data(), &positions);
      PushBatch b;
      if (use_positions) b.positions = &positions;
      b.keys = keys;
      b.grads = grads.data();
      b.shows = ones.data();
      b.clicks = zeros.data();
      if (s.ok()) s = table->Push(b).status();
    } else {
      s = client->Pull(keys, true, rows.data());
      latencies_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
      starts_ms.push_back(absl::ToDoubleMilliseconds(t0 - absl::UnixEpoch()));
      if (s.ok()) s = client->PushAsync(keys, grads, ones, zeros);
    }
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
      return 1;
    }
    pulled += keys.size();
    pushed += keys.size();
    if (target > 0) {  // pace to the target rate
      const absl::Time due = start + absl::Seconds(pulled / target);
      const absl::Time now = absl::Now();
      if (due > now) absl::SleepFor(due - now);
    }
  }
  if (client) {
    absl::Status s = client->Flush();
    if (!s.ok()) return 1;
  }
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
  const uint64_t push_requests = client ? client->Stats().pushes_sent : 0;
  const double cpu = CpuSeconds() - cpu_start;
  if (flags.Has("latency_trace")) {
    FILE* f = std::fopen(flags.Get("latency_trace").c_str(), "w");
    if (f == nullptr) return 1;
    for (size_t i = 0; i < latencies_ms.size(); ++i) {
      std::fprintf(f, "%.3f %.3f\n", starts_ms[i], latencies_ms[i]);
    }
    std::fclose(f);
  }
  std::printf(
      "keys_pulled=%llu keys_pushed=%llu seconds=%.3f p50_ms=%.3f "
      "p99_ms=%.3f p999_ms=%.3f cpu_s=%.3f push_requests=%llu\n",
      static_cast<unsigned long long>(pulled),
      static_cast<unsigned long long>(pushed), elapsed,
      Percentile(latencies_ms, 0.5), Percentile(latencies_ms, 0.99),
      Percentile(latencies_ms, 0.999), cpu,
      static_cast<unsigned long long>(push_requests));
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) {
  // As `sampan` does (cli/main.cc): no deadlock graph on gRPC's locks.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  auto flags = sampan::Flags::Parse(
      argc, argv, 1,
      {"pservers", "batch", "dim", "seconds", "target_keys_per_sec", "mode",
       "num_shards", "key_space", "seed", "data_dir", "batches",
       "durability_log", "latency_trace", "positions", "row_format"});
  if (!flags.ok()) {
    std::fprintf(stderr, "%s\n", std::string(flags.status().message()).c_str());
    return 2;
  }
  return sampan::Run(*flags);
}
