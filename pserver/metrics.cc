#include "pserver/metrics.h"

#include "common/metrics.h"

namespace sampan {
namespace {

const char* MethodName(Method m) {
  return m == Method::kPull ? "Pull" : "Push";
}

const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    default:
      return "OTHER";
  }
}

PserverMetrics* Build() {
  auto& r = MetricsRegistry();
  auto* m = new PserverMetrics;
  auto& keys = prometheus::BuildCounter()
                   .Name("sampan_pserver_keys_total")
                   .Help("Keys served, by method.")
                   .Register(r);
  auto& bytes = prometheus::BuildCounter()
                    .Name("sampan_pserver_payload_bytes_total")
                    .Help("Row payload bytes pulled or pushed, by method.")
                    .Register(r);
  auto& latency = prometheus::BuildHistogram()
                      .Name("sampan_pserver_request_duration_seconds")
                      .Help("Time from arrival to answer, queueing included.")
                      .Register(r);
  for (Method method : {Method::kPull, Method::kPush}) {
    const int i = static_cast<int>(method);
    m->keys[i] = &keys.Add({{"method", MethodName(method)}});
    m->bytes[i] = &bytes.Add({{"method", MethodName(method)}});
    m->latency[i] =
        &latency.Add({{"method", MethodName(method)}}, LatencyBuckets());
  }
  m->requests = &prometheus::BuildCounter()
                     .Name("sampan_pserver_requests_total")
                     .Help("Requests answered, by method and gRPC code.")
                     .Register(r);
  m->queue_depth = &prometheus::BuildGauge()
                        .Name("sampan_pserver_queue_depth")
                        .Help("Requests waiting for a worker thread.")
                        .Register(r)
                        .Add({});
  m->table_rows = &prometheus::BuildGauge()
                       .Name("sampan_table_rows")
                       .Help("Rows in the sparse table (at the last Stats).")
                       .Register(r)
                       .Add({});
  m->table_dirty_rows =
      &prometheus::BuildGauge()
           .Name("sampan_table_dirty_rows")
           .Help(
               "Hot-tier rows changed but not yet written to RocksDB "
               "(redo log mode).")
           .Register(r)
           .Add({});
  m->table_redo_log_bytes =
      &prometheus::BuildGauge()
           .Name("sampan_table_redo_log_bytes")
           .Help("Bytes of the table's redo log segment files.")
           .Register(r)
           .Add({});
  m->table_shrinks =
      &prometheus::BuildCounter()
           .Name("sampan_table_shrinks_total")
           .Help(
               "Table shrinks completed (show/click decay, a day of age, "
               "row deletion).")
           .Register(r)
           .Add({});
  m->table_rows_evicted = &prometheus::BuildCounter()
                               .Name("sampan_table_rows_evicted_total")
                               .Help(
                                   "Rows deleted by table shrinks (score below "
                                   "delete_threshold or unseen too long).")
                               .Register(r)
                               .Add({});
  auto& move_rows = prometheus::BuildCounter()
                        .Name("sampan_pserver_shard_move_rows_total")
                        .Help(
                            "Rows of shards moved, by direction (export: "
                            "sent from here; import: received).")
                        .Register(r);
  auto& move_duration =
      prometheus::BuildHistogram()
          .Name("sampan_pserver_shard_move_duration_seconds")
          .Help("Time of a completed shard export or import, by direction.")
          .Register(r);
  const char* directions[2] = {"export", "import"};
  for (int i = 0; i < 2; ++i) {
    m->shard_move_rows[i] = &move_rows.Add({{"direction", directions[i]}});
    m->shard_move_duration[i] = &move_duration.Add(
        {{"direction", directions[i]}},
        prometheus::Histogram::BucketBoundaries{0.01, 0.1, 0.5, 1, 2, 5, 10, 30,
                                                60, 120, 300, 600});
  }
  m->shards_moving = &prometheus::BuildGauge()
                          .Name("sampan_pserver_shards_moving")
                          .Help("Shard exports and imports in progress.")
                          .Register(r)
                          .Add({});
  m->shard_map_version =
      &prometheus::BuildGauge()
           .Name("sampan_pserver_shard_map_version")
           .Help("Version of the shard map this pserver serves by.")
           .Register(r)
           .Add({});
  m->duplicate_keys =
      &prometheus::BuildCounter()
           .Name("sampan_pserver_duplicate_push_keys_total")
           .Help("Pushed keys skipped as replays of an applied sequence.")
           .Register(r)
           .Add({});
  m->rejected_gradients = &prometheus::BuildCounter()
                               .Name("sampan_pserver_rejected_pushes_total")
                               .Help("Pushes refused for non-finite gradients.")
                               .Register(r)
                               .Add({});
  return m;
}

}  // namespace

PserverMetrics* PserverMetrics::Get() {
  static PserverMetrics* metrics = Build();
  return metrics;
}

void PserverMetrics::Record(Method method, const grpc::Status& status,
                            absl::Duration latency_time) {
  const int i = static_cast<int>(method);
  requests
      ->Add({{"method", MethodName(method)},
             {"code", CodeName(status.error_code())}})
      .Increment();
  latency[i]->Observe(absl::ToDoubleSeconds(latency_time));
}

void PserverMetrics::AddKeys(Method method, uint64_t n, uint64_t payload) {
  const int i = static_cast<int>(method);
  keys[i]->Increment(n);
  bytes[i]->Increment(payload);
}

}  // namespace sampan
