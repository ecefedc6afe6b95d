// Prometheus metrics for every Sampan process.
//
// One registry per process (MetricsRegistry()) that components add their
// families to; MetricsServer serves it, plus process metrics
// (process_resident_memory_bytes, process_cpu_seconds_total,
// process_start_time_seconds, read from /proc at scrape time), on
// host:port/metrics. Names follow Prometheus conventions: sampan_ prefix,
// base units, _total for counters, _seconds for durations.
//
// /metrics is under the job's listen policy (common/security.h), as its
// gRPC servers are: a non-loopback host needs TLS and a token, or
// `insecure`. With TLS configured it is served over HTTPS only, with the
// job's certificate, and with a token a scrape must carry
// `Authorization: Bearer <token>` (else 401 and no metrics): what a secured
// job's gRPC servers demand of their callers. Client certificates are not
// asked for, mutual_tls or not.
//
// prometheus-cpp's counters, gauges and histograms are thread-safe; the
// registry is safe to add to from any thread.
#ifndef SAMPAN_COMMON_METRICS_H_
#define SAMPAN_COMMON_METRICS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/security.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace sampan {

// The process-wide registry; never null, lives until exit.
prometheus::Registry& MetricsRegistry();

// Latency buckets from 50 µs to about 10 s, for RPC histograms; 5, 7.5 and
// 10 ms around serving's 10 ms p99 target, so a quantile estimated from the
// buckets there is off by at most 2.5 ms.
const std::vector<double>& LatencyBuckets();

// The process's resident memory, from /proc/self/statm.
uint64_t ResidentMemoryBytes();

// Another page on the metrics server, under the same policy (TLS, then the
// token unless `without_token`: for a page that carries no data of the
// job, such as a shell that fetches the rest with the token). `render` runs
// on the server's thread for every GET and must be thread-safe.
struct HttpPage {
  std::string path;  // "/job"
  std::string content_type = "text/html; charset=utf-8";
  std::function<std::string()> render;
  bool without_token = false;
};

struct MetricsServerOptions {
  // Address to listen on; port 0 picks a free one.
  std::string host = "127.0.0.1";
  int port = 0;
  // The job's cluster.security: TLS (cert and key: HTTPS only) and the
  // bearer token scrapes must carry, under the listen policy above.
  SecurityOptions security;
  std::vector<HttpPage> pages;
};

// Serves /metrics and options.pages from one thread of its own until
// destroyed. Other paths get 404, methods other than GET and HEAD 501
// (libevent's answer).
class MetricsServer {
 public:
  // FailedPrecondition/InvalidArgument when the listen policy forbids the
  // options (a config error); NotFound/InvalidArgument naming an unreadable
  // certificate, key or token file; Unavailable if the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const MetricsServerOptions& options);
  ~MetricsServer();  // stops serving; in-flight scrapes are cut off

  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }
  // "https" or "http".
  const char* scheme() const;

 private:
  struct Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl, int port);
  std::unique_ptr<Impl> impl_;
  int port_;
};

}  // namespace sampan

#endif  // SAMPAN_COMMON_METRICS_H_
