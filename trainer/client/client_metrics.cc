#include "trainer/client/client_metrics.h"

#include <string>

#include "common/metrics.h"

namespace sampan {
namespace {

struct Families {
  prometheus::Family<prometheus::Counter>& push_requests;
  prometheus::Family<prometheus::Counter>& push_retries;
  prometheus::Family<prometheus::Gauge>& pending;
  prometheus::Family<prometheus::Gauge>& lag;
  PullMetrics pull;
  prometheus::Counter* map_refreshes;
};

Families& Get() {
  static Families* f = [] {
    auto& r = MetricsRegistry();
    auto& pull_duration =
        prometheus::BuildHistogram()
            .Name("sampan_client_pull_duration_seconds")
            .Help("Pull calls from the trainer, retries included.")
            .Register(r);
    auto& pull_retries = prometheus::BuildCounter()
                             .Name("sampan_client_pull_retries_total")
                             .Help(
                                 "Pull attempts repeated after a transient "
                                 "failure.")
                             .Register(r);
    auto& map_refreshes =
        prometheus::BuildCounter()
            .Name("sampan_client_shard_map_refreshes_total")
            .Help(
                "Newer shard maps adopted from the coordinator (a pserver "
                "back at another address).")
            .Register(r);
    return new Families{
        prometheus::BuildCounter()
            .Name("sampan_client_push_requests_total")
            .Help("Push requests acknowledged, by pserver.")
            .Register(r),
        prometheus::BuildCounter()
            .Name("sampan_client_push_retries_total")
            .Help("Push attempts repeated after a transient failure.")
            .Register(r),
        prometheus::BuildGauge()
            .Name("sampan_client_push_pending_keys")
            .Help("Merged keys waiting in the push queue, by pserver.")
            .Register(r),
        prometheus::BuildGauge()
            .Name("sampan_client_push_lag_seconds")
            .Help("Age of the oldest gradient not yet acknowledged.")
            .Register(r),
        PullMetrics{&pull_duration.Add({}, LatencyBuckets()),
                    &pull_retries.Add({})},
        &map_refreshes.Add({})};
  }();
  return *f;
}

}  // namespace

PushQueueMetrics NewPushQueueMetrics(int pserver) {
  Families& f = Get();
  const prometheus::Labels labels{{"pserver", std::to_string(pserver)}};
  return {&f.push_requests.Add(labels), &f.push_retries.Add(labels),
          &f.pending.Add(labels), &f.lag.Add(labels)};
}

PullMetrics GetPullMetrics() { return Get().pull; }

prometheus::Counter* GetMapRefreshCounter() { return Get().map_refreshes; }

}  // namespace sampan
