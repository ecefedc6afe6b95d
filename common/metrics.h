// Prometheus metrics for every Sampan process.
//
// One registry per process (MetricsRegistry()) that components add their
// families to; StartMetricsServer() serves it, plus process metrics
// (process_resident_memory_bytes, process_cpu_seconds_total,
// process_start_time_seconds, read from /proc at scrape time), on
// http://host:port/metrics. Names follow Prometheus conventions: sampan_
// prefix, base units, _total for counters, _seconds for durations.
//
// prometheus-cpp's counters, gauges and histograms are thread-safe; the
// registry is safe to add to from any thread.
#ifndef SAMPAN_COMMON_METRICS_H_
#define SAMPAN_COMMON_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace sampan {

// The process-wide registry; never null, lives until exit.
prometheus::Registry& MetricsRegistry();

// Latency buckets from 50 µs to about 10 s, for RPC histograms.
const std::vector<double>& LatencyBuckets();

class MetricsServer {
 public:
  // Serves /metrics on host:port (port 0 picks a free one). Unavailable if
  // the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& host, int port);
  int port() const { return port_; }

 private:
  MetricsServer(std::unique_ptr<prometheus::Exposer> exposer, int port);
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<prometheus::Collectable> process_;
  int port_;
};

}  // namespace sampan

#endif  // SAMPAN_COMMON_METRICS_H_
