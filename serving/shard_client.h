// The predictor front end's side of sharded serving (serving.shards: N > 1):
// channels to the N lookup shards (serving/lookup_service.h), the newest
// version every shard holds, and a RowSource that gathers a batch's rows
// from the shards.
//
// Promises: a lookup sends one Lookup RPC to each shard that owns any of
// the batch's keys, all at once, each with the deadline; it returns within
// about the deadline whatever the shards do. A shard that is down, stopped
// or too slow fails the lookup with UNAVAILABLE naming it; a shard that no
// longer holds the version, FAILED_PRECONDITION. Channels reconnect by
// themselves (backoff at most a second), so a shard restarted on its port
// or continued after SIGSTOP is used again within about a second.
// Thread-safe.
#ifndef SAMPAN_SERVING_SHARD_CLIENT_H_
#define SAMPAN_SERVING_SHARD_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/serving.grpc.pb.h"
#include "trainer/scoring.h"

namespace sampan {

struct ShardClientOptions {
  // host:port of lookup shard 0..N-1.
  std::vector<std::string> addresses;
  // table.num_shards: the training shard map (common/hash.h).
  uint32_t table_shards = 1;
  // Of every RPC to a shard.
  absl::Duration deadline = absl::Seconds(1);
  // TLS and token as the shards want them; null = plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
};

class ShardClients : public std::enable_shared_from_this<ShardClients> {
 public:
  explicit ShardClients(const ShardClientOptions& options);

  // The newest version every shard holds. Unavailable naming the shard when
  // one does not answer in time, or when no version is held by all yet.
  absl::StatusOr<uint64_t> CommonVersion();

  // The rows of `version` on the shards, as wide as the shards said in the
  // last CommonVersion. The RowSource keeps these clients alive.
  std::shared_ptr<const RowSource> RowsOf(uint64_t version);

  // Looks up `keys` of `version` on the shards (RowSource::Lookup).
  absl::Status Lookup(uint64_t version, int row_dim,
                      absl::Span<const uint64_t> keys, float* rows,
                      uint8_t* found) const;

 private:
  std::string Name(size_t shard) const;

  const ShardClientOptions options_;
  std::vector<std::unique_ptr<serving::Lookup::Stub>> stubs_;
  std::atomic<int> row_dim_{0};
};

}  // namespace sampan

#endif  // SAMPAN_SERVING_SHARD_CLIENT_H_
