// The Prometheus metrics of `sampan serve` (common/metrics.h's registry):
//   sampan_serving_requests_total{code}        Predict calls by gRPC code
//   sampan_serving_request_duration_seconds    Predict latency histogram
//   sampan_serving_examples_total              examples scored
//   sampan_serving_row_lookups_total{result}   distinct signs looked up:
//                                              "hit" (a row) or "miss"
//   sampan_serving_model_version               version served (0: none or an
//                                              exported model)
//   sampan_serving_model_age_seconds           now - its VERSION's created
//   sampan_serving_model_rows                  its sparse rows (RocksDB's
//                                              estimate with a store)
//   sampan_serving_version_loads_total         versions swapped in
//   sampan_serving_version_load_failures_total versions refused
// With serving.store_dir (serving/row_store.h):
//   sampan_serving_store_bytes                 SST files and memtables
//   sampan_serving_store_cache_bytes           block cache in use
//   sampan_serving_store_cache_lookups_total{result}  data block reads,
//                                              "hit" (the block cache) or
//                                              "miss" (from disk)
//   sampan_serving_store_cache_hit_ratio       hits / lookups since start
//   sampan_serving_store_memory_bytes          what its memory budget bounds
//   sampan_serving_store_hot_rows              decoded rows in its hot tier
//   sampan_serving_store_hot_lookups_total{result}  keys looked up, "hit"
//                                              (the hot tier had the row) or
//                                              "miss" (read from RocksDB)
//   sampan_serving_store_hot_hit_ratio         hits / lookups since start
// A lookup shard's RPCs (serving/lookup_service.h), by method ("Lookup",
// "Versions"):
//   sampan_serving_lookup_requests_total{method,code}  calls by gRPC code
//   sampan_serving_lookup_request_duration_seconds{method}  latency histogram
//   sampan_serving_lookup_keys_total           keys of answered Lookups
// Process-wide and thread-safe.
#ifndef SAMPAN_SERVING_SERVING_METRICS_H_
#define SAMPAN_SERVING_SERVING_METRICS_H_

#include <cstddef>

#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "serving/model_follower.h"
#include "serving/row_store.h"

namespace sampan {

// One Predict call's outcome.
void RecordPredict(grpc::StatusCode code, absl::Duration latency,
                   size_t examples, size_t hits, size_t misses);

// One call to a lookup shard: its method, outcome, time from arrival to
// answer, and the keys it answered (0 for a failed call).
void RecordLookupRpc(const char* method, grpc::StatusCode code,
                     absl::Duration latency, size_t keys);

// A load's outcome (ModelFollower's on_load).
void RecordLoad(const absl::Status& status, const ServedModel* loaded);

// Refreshes the age gauge of `served` (may be null).
void RecordAge(const ServedModel* served);

// Refreshes the store's gauges and counters (its counts since it opened).
void RecordStore(const VersionStore::Stats& stats);

}  // namespace sampan

#endif  // SAMPAN_SERVING_SERVING_METRICS_H_
