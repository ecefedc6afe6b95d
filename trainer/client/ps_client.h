// The trainer's client for the pserver fleet.
//
// Keys are routed shard -> pserver by the cluster spec's map (see
// pserver/pserver.h). Pull fans one request out per pserver in parallel and
// waits for all of them, each with a deadline. PushAsync returns as soon as
// its requests are sent; at most `max_inflight_pushes` may be outstanding,
// after which PushAsync blocks (backpressure instead of unbounded memory).
// Flush waits for every outstanding push.
//
// Thread safety: all methods may be called from many threads at once.
//
// Not yet: retries with backoff and exactly-once sequences (a failed push is
// reported by Flush and fails the job rather than being retried blindly and
// possibly applied twice).
#ifndef SAMPAN_TRAINER_CLIENT_PS_CLIENT_H_
#define SAMPAN_TRAINER_CLIENT_PS_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace sampan {

struct PsClientOptions {
  std::vector<std::string> pserver_addresses;  // index = pserver index
  uint32_t num_shards = 64;
  // Floats per key in pulls and pushes.
  uint32_t row_dim = 1;
  absl::Duration deadline = absl::Seconds(10);
  int max_inflight_pushes = 16;
  uint32_t trainer_id = 0;
};

class PsClient {
 public:
  static std::unique_ptr<PsClient> Create(const PsClientOptions& options);
  virtual ~PsClient() = default;

  // Reads keys.size() rows into out (row_dim floats each). Keys should be
  // unique; each costs a lookup. Error names the pserver that failed.
  virtual absl::Status Pull(absl::Span<const uint64_t> keys, bool is_training,
                            float* out) = 0;

  // Sends gradients (row_dim floats per key) and statistics. Copies what it
  // needs before returning. Returns the first error of an earlier push, if
  // any, so failures surface promptly.
  virtual absl::Status PushAsync(absl::Span<const uint64_t> keys,
                                 absl::Span<const float> grads,
                                 absl::Span<const float> shows,
                                 absl::Span<const float> clicks) = 0;

  // Waits for every outstanding push; returns the first push error.
  virtual absl::Status Flush() = 0;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CLIENT_PS_CLIENT_H_
