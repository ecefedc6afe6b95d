// A client for the coordinator that puts a deadline on every call.
//
// Thread-safe (gRPC stubs are). Waits (cluster spec, barriers, keys) are
// bounded by `wait_timeout`, every other call by `rpc_deadline`. Register,
// Barrier, KvPut and KvGet ride out a coordinator that is down, restarting
// or stalled: they wait for it and retry UNAVAILABLE, and an attempt that
// ran out its rpc_deadline, within wait_timeout (an arrival or a put made
// twice is the same as once). Heartbeats, shard
// map fetches, job status and checkpoint arrivals are tried once: their
// callers try again on their own schedule or abandon the round.
//
// Fencing (common/coordinator_epoch.h): every call carries the newest
// coordinator epoch this client has seen, and an answer from an older
// coordinator (one that was stopped and replaced, then woke up) is not
// taken: the call fails UNAVAILABLE, so the retried ones wait for the
// current coordinator.
#ifndef SAMPAN_COORDINATOR_CLIENT_H_
#define SAMPAN_COORDINATOR_CLIENT_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/grpc_status.h"
#include "common/shard_map.h"
#include "grpcpp/security/credentials.h"
#include "proto/coordinator.grpc.pb.h"

namespace sampan {

class CoordinatorClient {
 public:
  // `credentials` null means plaintext (see common/security.h). With TLS,
  // the coordinator's certificate is checked against `tls_name` instead of
  // the host in `address` when it is set (a coordinator calling itself at
  // the IP it bound, under the name it advertises).
  CoordinatorClient(
      const std::string& address, absl::Duration rpc_deadline,
      absl::Duration wait_timeout,
      std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr,
      const std::string& tls_name = "");

  // Fills `response` (when not null): a trainer's writer id, for one.
  absl::Status Register(coord::Role role, int index, const std::string& address,
                        coord::RegisterResponse* response = nullptr);
  // Fills `response` (when not null) with what the coordinator asks for.
  absl::Status Heartbeat(const coord::HeartbeatRequest& request,
                         coord::HeartbeatResponse* response = nullptr);
  // Waits up to `timeout` for the checkpoint this arrival joins to end.
  absl::StatusOr<coord::CheckpointArriveResponse> CheckpointArrive(
      const coord::CheckpointArriveRequest& request, absl::Duration timeout);
  // Waits until every pserver has registered.
  absl::StatusOr<coord::ClusterSpec> WaitClusterSpec();
  // The coordinator's shard map as it is now (no wait): what a client that
  // cannot reach a pserver, or was refused as routing by a stale map, asks
  // for. A pserver not registered has an empty address.
  absl::StatusOr<ShardMap> GetShardMap();
  // Waits up to `timeout` (zero: wait_timeout) for `count` arrivals.
  absl::Status Barrier(const std::string& name, int count, int index,
                       absl::Duration timeout = absl::ZeroDuration());
  absl::Status KvPut(const std::string& key, const std::string& value);
  // Returns the value of `key`. With `wait`, waits up to `timeout` for the key
  // to be set (DEADLINE_EXCEEDED after); without, NOT_FOUND when absent.
  absl::StatusOr<std::string> KvGet(const std::string& key, bool wait,
                                    absl::Duration timeout);
  absl::StatusOr<coord::JobStatusResponse> JobStatus();
  // Asks for a fleet of `num_pservers` (coordinator.proto Scale); not
  // retried: a refusal says why.
  absl::StatusOr<coord::ScaleResponse> Scale(uint32_t num_pservers);

  const std::string& address() const { return address_; }
  // The newest coordinator epoch an answer carried; 0 before any.
  uint64_t newest_epoch() const { return newest_epoch_.load(); }

  static ShardMap ToShardMap(const coord::ShardMap& map);

 private:
  std::string address_;
  absl::Duration rpc_deadline_, wait_timeout_;
  std::unique_ptr<coord::Coordinator::Stub> stub_;
  std::atomic<uint64_t> newest_epoch_{0};
};

}  // namespace sampan

#endif  // SAMPAN_COORDINATOR_CLIENT_H_
