#include "serving/serving_metrics.h"

#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "common/metrics.h"

namespace sampan {
namespace {

struct Metrics {
  prometheus::Family<prometheus::Counter>* requests;
  prometheus::Histogram* latency;
  prometheus::Counter* examples;
  prometheus::Counter* hits;
  prometheus::Counter* misses;
  prometheus::Gauge* version;
  prometheus::Gauge* age;
  prometheus::Gauge* rows;
  prometheus::Counter* loads;
  prometheus::Counter* load_failures;
  prometheus::Gauge* store_bytes;
  prometheus::Gauge* store_cache_bytes;
  prometheus::Counter* store_hits;
  prometheus::Counter* store_misses;
  prometheus::Gauge* store_hit_ratio;
  prometheus::Gauge* store_memory;
  prometheus::Gauge* hot_rows;
  prometheus::Counter* hot_hits;
  prometheus::Counter* hot_misses;
  prometheus::Gauge* hot_hit_ratio;
  prometheus::Family<prometheus::Counter>* lookup_requests;
  prometheus::Family<prometheus::Histogram>* lookup_latency;
  prometheus::Counter* lookup_keys;
  // The store's counts at the last RecordStore.
  std::mutex store_mu;
  uint64_t last_hits = 0, last_misses = 0;
  uint64_t last_hot_hits = 0, last_hot_misses = 0;
};

// The one unlabeled metric of a new family built by `builder`.
template <typename Builder>
auto* Single(Builder builder, const std::string& name,
             const std::string& help) {
  return &builder.Name(name).Help(help).Register(MetricsRegistry()).Add({});
}

Metrics* Build() {
  auto& r = MetricsRegistry();
  auto* m = new Metrics;
  m->requests = &prometheus::BuildCounter()
                     .Name("sampan_serving_requests_total")
                     .Help("Predict calls answered, by gRPC code.")
                     .Register(r);
  m->latency = &prometheus::BuildHistogram()
                    .Name("sampan_serving_request_duration_seconds")
                    .Help("Predict calls' time from arrival to answer.")
                    .Register(r)
                    .Add({}, LatencyBuckets());
  m->examples =
      Single(prometheus::BuildCounter(), "sampan_serving_examples_total",
             "Examples scored by Predict calls.");
  auto& lookups = prometheus::BuildCounter()
                      .Name("sampan_serving_row_lookups_total")
                      .Help(
                          "Distinct signs of Predict calls looked up, by "
                          "whether the model held a row.")
                      .Register(r);
  m->hits = &lookups.Add({{"result", "hit"}});
  m->misses = &lookups.Add({{"result", "miss"}});
  m->version = Single(prometheus::BuildGauge(), "sampan_serving_model_version",
                      "Model version served (0: none yet, or an exported "
                      "model).");
  m->age = Single(prometheus::BuildGauge(), "sampan_serving_model_age_seconds",
                  "Seconds since the served version was published.");
  m->rows = Single(prometheus::BuildGauge(), "sampan_serving_model_rows",
                   "Sparse rows of the served version.");
  m->loads =
      Single(prometheus::BuildCounter(), "sampan_serving_version_loads_total",
             "Model versions verified and swapped in.");
  m->load_failures = Single(
      prometheus::BuildCounter(), "sampan_serving_version_load_failures_total",
      "Model versions refused (corrupt, half-written, another model) "
      "or unreadable LATEST pointers.");
  m->store_bytes =
      Single(prometheus::BuildGauge(), "sampan_serving_store_bytes",
             "Bytes of the serving store's SST files and memtables.");
  m->store_cache_bytes =
      Single(prometheus::BuildGauge(), "sampan_serving_store_cache_bytes",
             "Bytes of the serving store's block cache in use.");
  auto& cache = prometheus::BuildCounter()
                    .Name("sampan_serving_store_cache_lookups_total")
                    .Help(
                        "Data block reads of the serving store, by whether "
                        "the block cache held the block.")
                    .Register(r);
  m->store_hits = &cache.Add({{"result", "hit"}});
  m->store_misses = &cache.Add({{"result", "miss"}});
  m->store_hit_ratio =
      Single(prometheus::BuildGauge(), "sampan_serving_store_cache_hit_ratio",
             "Share of the serving store's data block reads the block cache "
             "answered since start.");
  m->store_memory =
      Single(prometheus::BuildGauge(), "sampan_serving_store_memory_bytes",
             "Bytes of memory the serving store uses of its budget (hot tier, "
             "memtables, block cache, index and filter blocks).");
  m->hot_rows =
      Single(prometheus::BuildGauge(), "sampan_serving_store_hot_rows",
             "Decoded rows in the serving store's hot tier.");
  auto& hot = prometheus::BuildCounter()
                  .Name("sampan_serving_store_hot_lookups_total")
                  .Help(
                      "Keys the serving store looked up, by whether its hot "
                      "tier held the row (hit) or RocksDB was read (miss).")
                  .Register(r);
  m->hot_hits = &hot.Add({{"result", "hit"}});
  m->hot_misses = &hot.Add({{"result", "miss"}});
  m->hot_hit_ratio =
      Single(prometheus::BuildGauge(), "sampan_serving_store_hot_hit_ratio",
             "Share of the serving store's key lookups its hot tier "
             "answered since start.");
  m->lookup_requests = &prometheus::BuildCounter()
                            .Name("sampan_serving_lookup_requests_total")
                            .Help(
                                "Calls a lookup shard answered, by method and "
                                "gRPC code.")
                            .Register(r);
  m->lookup_latency =
      &prometheus::BuildHistogram()
           .Name("sampan_serving_lookup_request_duration_seconds")
           .Help("A lookup shard's calls' time from arrival to answer.")
           .Register(r);
  m->lookup_keys =
      Single(prometheus::BuildCounter(), "sampan_serving_lookup_keys_total",
             "Keys of the Lookup calls a lookup shard answered.");
  return m;
}

Metrics& M() {
  static Metrics* m = Build();
  return *m;
}

}  // namespace

void RecordPredict(grpc::StatusCode code, absl::Duration latency,
                   size_t examples, size_t hits, size_t misses) {
  Metrics& m = M();
  m.requests
      ->Add({{"code",
              absl::StatusCodeToString(static_cast<absl::StatusCode>(code))}})
      .Increment();
  m.latency->Observe(absl::ToDoubleSeconds(latency));
  m.examples->Increment(double(examples));
  m.hits->Increment(double(hits));
  m.misses->Increment(double(misses));
}

void RecordLookupRpc(const char* method, grpc::StatusCode code,
                     absl::Duration latency, size_t keys) {
  Metrics& m = M();
  m.lookup_requests
      ->Add({{"method", method},
             {"code",
              absl::StatusCodeToString(static_cast<absl::StatusCode>(code))}})
      .Increment();
  // Add returns the existing histogram of these labels after the first call.
  m.lookup_latency->Add({{"method", method}}, LatencyBuckets())
      .Observe(absl::ToDoubleSeconds(latency));
  m.lookup_keys->Increment(double(keys));
}

void RecordLoad(const absl::Status& status, const ServedModel* loaded) {
  Metrics& m = M();
  if (!status.ok()) {
    m.load_failures->Increment();
    return;
  }
  m.loads->Increment();
  if (loaded == nullptr) return;
  m.version->Set(double(loaded->version));
  m.rows->Set(double(loaded->rows));
  RecordAge(loaded);
}

void RecordAge(const ServedModel* served) {
  if (served == nullptr || served->created_unix_seconds <= 0) return;
  M().age->Set(absl::ToUnixMicros(absl::Now()) / 1e6 -
               served->created_unix_seconds);
}

void RecordStore(const VersionStore::Stats& stats) {
  Metrics& m = M();
  m.store_bytes->Set(double(stats.bytes));
  m.store_cache_bytes->Set(double(stats.cache_bytes));
  std::lock_guard<std::mutex> lock(m.store_mu);
  if (stats.cache_hits >= m.last_hits) {
    m.store_hits->Increment(double(stats.cache_hits - m.last_hits));
  }
  if (stats.cache_misses >= m.last_misses) {
    m.store_misses->Increment(double(stats.cache_misses - m.last_misses));
  }
  m.last_hits = stats.cache_hits;
  m.last_misses = stats.cache_misses;
  const uint64_t lookups = stats.cache_hits + stats.cache_misses;
  if (lookups > 0) m.store_hit_ratio->Set(double(stats.cache_hits) / lookups);
  m.store_memory->Set(double(stats.memory_bytes));
  m.hot_rows->Set(double(stats.hot_rows));
  if (stats.hot_hits >= m.last_hot_hits) {
    m.hot_hits->Increment(double(stats.hot_hits - m.last_hot_hits));
  }
  if (stats.hot_misses >= m.last_hot_misses) {
    m.hot_misses->Increment(double(stats.hot_misses - m.last_hot_misses));
  }
  m.last_hot_hits = stats.hot_hits;
  m.last_hot_misses = stats.hot_misses;
  const uint64_t keys = stats.hot_hits + stats.hot_misses;
  if (keys > 0) m.hot_hit_ratio->Set(double(stats.hot_hits) / keys);
}

}  // namespace sampan
