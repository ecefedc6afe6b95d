#include "serving/serving_metrics.h"

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

void RecordLoad(const absl::Status& status, const ServedModel* loaded) {
  Metrics& m = M();
  if (!status.ok()) {
    m.load_failures->Increment();
    return;
  }
  m.loads->Increment();
  if (loaded == nullptr) return;
  m.version->Set(double(loaded->version));
  m.rows->Set(double(loaded->scoring->loaded.sparse.index.size()));
  RecordAge(loaded);
}

void RecordAge(const ServedModel* served) {
  if (served == nullptr || served->created_unix_seconds <= 0) return;
  M().age->Set(absl::ToUnixMicros(absl::Now()) / 1e6 -
               served->created_unix_seconds);
}

}  // namespace sampan
