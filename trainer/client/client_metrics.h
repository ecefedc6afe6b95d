// The PS client's Prometheus metrics, in MetricsRegistry() (common/metrics.h),
// served by whichever process hosts the client. Thread-safe (atomic metrics;
// families are created once, labelled children on first use).
#ifndef SAMPAN_TRAINER_CLIENT_CLIENT_METRICS_H_
#define SAMPAN_TRAINER_CLIENT_CLIENT_METRICS_H_

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"

namespace sampan {

// The metrics of the push queue to one pserver.
struct PushQueueMetrics {
  prometheus::Counter* requests;    // sampan_client_push_requests_total
  prometheus::Counter* retries;     // sampan_client_push_retries_total
  prometheus::Gauge* pending_keys;  // sampan_client_push_pending_keys
  // Age of the oldest gradient not yet acknowledged by this pserver.
  prometheus::Gauge* lag_seconds;  // sampan_client_push_lag_seconds
};

PushQueueMetrics NewPushQueueMetrics(int pserver);

struct PullMetrics {
  prometheus::Histogram* duration;  // sampan_client_pull_duration_seconds
  prometheus::Counter* retries;     // sampan_client_pull_retries_total
};

PullMetrics GetPullMetrics();

// sampan_client_shard_map_refreshes_total: newer maps adopted.
prometheus::Counter* GetMapRefreshCounter();

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CLIENT_CLIENT_METRICS_H_
