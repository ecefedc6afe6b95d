// The trainer's client for the pserver fleet.
//
// Routing: keys go shard -> pserver by the job's shard map
// (common/shard_map.h). When a pserver cannot be reached or refuses a key as
// not its own, the client asks the coordinator for its newest map
// (fetch_shard_map) and retries with it: a pserver that came back at
// another address is followed, and so is a shard that moved to another
// pserver or a fleet that grew or shrank (trainer/client/routes.h).
//
// Pull fans out one request per pserver (split into requests of at most
// max_keys_per_request keys) in parallel, each attempt with a deadline, and
// waits for all of them. Failed attempts with a transient status
// (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED, CANCELLED:
// common/retry.h) are retried with exponential backoff until retry_timeout
// has passed; keys not read yet are re-planned by a newer map that moved
// their shards.
//
// PushAsync merges gradients into a bounded queue per pserver (gradients,
// shows and clicks of the same key are summed) and returns at once. One
// sender thread per pserver sends the merged batch while the next one
// accumulates, so a slow pserver means bigger, fewer pushes rather than more
// memory. When a queue holds max_pending_keys keys, PushAsync blocks
// (backpressure) until it drains, for at most retry_timeout.
//
// Shrink asks every pserver of the coordinator's current map to shrink the
// client's table (proto/ps.proto): a table-lifecycle call for whoever runs
// the job, not for a training step.
//
// Exactly once: every push request carries (writer_id, sequence), only one
// request per pserver is in flight, and a retry resends the same sequence,
// so the pserver applies each push once even when an ack was lost (see
// sparse_table.h). Sequences come from one counter per client, so those a
// shard sees increase whichever pserver holds it. While a shard moves its
// pushes are refused ("moving") and retried with backoff; when the map that
// moves it arrives, every push not acknowledged is resent to the shard's new
// owner, with its sequence, before anything newer
// (trainer/client/push_router.h).
//
// Thread safety: all methods may be called from many threads at once.
#ifndef SAMPAN_TRAINER_CLIENT_PS_CLIENT_H_
#define SAMPAN_TRAINER_CLIENT_PS_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/shard_map.h"
#include "grpcpp/security/credentials.h"

namespace sampan {

struct PsClientOptions {
  // The map to start with: shard owners and pserver addresses.
  ShardMap shard_map;
  // Asks for the newest map (the coordinator's); null: the map never
  // changes. Called from the threads of failed calls, one at a time, at
  // most once per min_map_refresh unless a pserver says a newer map exists
  // (a version it has not said before), and once at the start of a Shrink.
  std::function<absl::StatusOr<ShardMap>()> fetch_shard_map;
  absl::Duration min_map_refresh = absl::Milliseconds(500);
  // Floats per key in pulls and pushes.
  uint32_t row_dim = 1;
  // The pservers' table these rows belong to (sparse_table/job_options.h).
  uint32_t table_id = 0;
  // Deadline of each RPC attempt.
  absl::Duration deadline = absl::Seconds(10);
  // Total time a call keeps retrying transient failures before it fails.
  absl::Duration retry_timeout = absl::Seconds(60);
  absl::Duration initial_backoff = absl::Milliseconds(20);
  absl::Duration max_backoff = absl::Seconds(2);
  // Larger pulls and pushes are split into requests of this many keys.
  size_t max_keys_per_request = 1 << 16;
  // Merged keys a pserver's push queue holds before PushAsync blocks.
  size_t max_pending_keys = 1 << 20;
  // Identifies this writer's pushes; never used by another writer
  // (the coordinator issues them: coordinator/id_source.h).
  uint64_t writer_id = 0;
  // Channel credentials (TLS, token); null means plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
};

struct PsClientStats {
  uint64_t pull_retries = 0;
  uint64_t push_retries = 0;
  uint64_t pushes_sent = 0;
  uint64_t pending_keys = 0;
  // Newer shard maps adopted.
  uint64_t map_refreshes = 0;
  // Age of the oldest gradient not yet acknowledged (0 when none).
  absl::Duration push_lag;
};

// What a Shrink did, summed over the pservers.
struct ShrinkTotals {
  uint64_t deleted_rows = 0;
  uint64_t rows = 0;  // left in the table after the shrink
};

class PsClient {
 public:
  static std::unique_ptr<PsClient> Create(const PsClientOptions& options);
  virtual ~PsClient() = default;

  // Reads keys.size() rows into out (row_dim floats each), in key order.
  // Keys should be unique; each costs a lookup. The error names the pserver.
  virtual absl::Status Pull(absl::Span<const uint64_t> keys, bool is_training,
                            float* out) = 0;

  // Queues gradients (row_dim floats per key) and statistics for sending;
  // copies what it needs. Returns the first error of an earlier push, if any,
  // so failures surface promptly; a failed push fails every later call.
  virtual absl::Status PushAsync(absl::Span<const uint64_t> keys,
                                 absl::Span<const float> grads,
                                 absl::Span<const float> shows,
                                 absl::Span<const float> clicks) = 0;

  // Waits until every queued gradient is acknowledged; returns the first
  // push error. Bounded by retry_timeout plus one deadline.
  virtual absl::Status Flush() = 0;

  // Shrinks the table (table_id) on every pserver, in parallel: show and
  // click decay, every row ages a day, rows past the accessor's thresholds
  // are deleted (proto/ps.proto). Each pserver's call may take `deadline`
  // (a large RocksDB table takes minutes, not a pull's seconds; pass e.g.
  // cluster.wait_timeout_seconds). The table's pulls and pushes wait
  // meanwhile, so call it while the trainers pause. Only a pserver that
  // refused the call (RESOURCE_EXHAUSTED) or was not reached (UNAVAILABLE)
  // is asked again, with backoff within retry_timeout: after any other
  // failure, a timeout included, it may have shrunk some rows, and a second
  // shrink would age them twice. (UNAVAILABLE may also be a pserver that
  // went away mid-shrink.) Returns the totals once every pserver has
  // answered OK; otherwise an error naming a failed pserver, preferring one
  // not retried (the others may have shrunk).
  virtual absl::StatusOr<ShrinkTotals> Shrink(absl::Duration deadline) = 0;

  virtual PsClientStats Stats() const = 0;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CLIENT_PS_CLIENT_H_
