// The pserver's Prometheus metrics, registered once per process in
// MetricsRegistry() (common/metrics.h). Thread-safe: prometheus-cpp metrics
// are atomic.
#ifndef SAMPAN_PSERVER_METRICS_H_
#define SAMPAN_PSERVER_METRICS_H_

#include <string>

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"

namespace sampan {

enum class Method { kPull = 0, kPush = 1 };

struct PserverMetrics {
  static PserverMetrics* Get();

  // Counts the request and its latency by method and gRPC status code.
  void Record(Method method, const grpc::Status& status,
              absl::Duration latency);
  // Counts keys and payload bytes of a served request.
  void AddKeys(Method method, uint64_t keys, uint64_t bytes);

  prometheus::Counter* keys[2];
  prometheus::Counter* bytes[2];
  prometheus::Histogram* latency[2];
  prometheus::Family<prometheus::Counter>* requests;
  prometheus::Gauge* queue_depth;
  prometheus::Gauge* table_rows;
  // Redo log: hot rows not yet written to RocksDB, and bytes of log files.
  prometheus::Gauge* table_dirty_rows;
  prometheus::Gauge* table_redo_log_bytes;
  // Shrink RPCs completed, and the rows they deleted.
  prometheus::Counter* table_shrinks;
  prometheus::Counter* table_rows_evicted;
  // Shard moves ([0] export, [1] import): rows moved and time per move;
  // exports and imports in progress; the shard map version in force.
  prometheus::Counter* shard_move_rows[2];
  prometheus::Histogram* shard_move_duration[2];
  prometheus::Gauge* shards_moving;
  prometheus::Gauge* shard_map_version;
  prometheus::Counter* duplicate_keys;
  prometheus::Counter* rejected_gradients;
};

}  // namespace sampan

#endif  // SAMPAN_PSERVER_METRICS_H_
