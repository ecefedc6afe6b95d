// Fleet: the coordinator's elastic pserver fleet. It holds the shard map
// (common/shard_map.h: which pserver owns each shard, where each serves,
// the map's version), the fleet's size, and carries out rescales (the
// Scale RPC, `sampan scale`) by moving shards between live pservers.
//
// Promises:
//  - Every change of owners is saved (options.save: the coordinator's state
//    file) before any pserver is told of it, and takes a map version above
//    every earlier one (coordinator/id_source.h). A pserver never goes back
//    to an older version, so it ends up with the newest assignment whichever
//    reaches it first: a Register answer or a SetShards call.
//  - One move at a time, on a thread of its own, in this order (docs/
//    architecture.md, "Moving a shard"): freeze the shard at its source
//    (its pushes are refused with the new version; clients wait and
//    retry), copy every table's rows and writer sequences to the target
//    (pserver/shard_copy.h), flip the owner (saved, then SetShards to both),
//    drop the source's copy. A failure before the flip abandons the move:
//    the source owns the shard again and the target's partial copy is
//    dropped; the move is retried after a backoff. After the flip only the
//    drop is left, retried until it succeeds. So every shard has exactly one
//    owner holding every acknowledged push, through any SIGKILL of source,
//    target or coordinator: a coordinator that finds a move unfinished in
//    its state abandons it the same way.
//  - Moves pause for checkpoints: PauseMoves waits for the step under way
//    (a move and its drop) to end and starts no other until ResumeMoves,
//    so no checkpoint sees half a move, and a checkpoint waits for at most
//    one move.
//  - Scaling down moves the leaving pservers' shards off, then shrinks the
//    fleet; the launcher (or Kubernetes) stops those pservers once
//    JobStatus shows the smaller size.
//  - Every call to a pserver has a deadline and carries the coordinator's
//    epoch; a superseded coordinator (options.superseded) starts no step.
//
// Thread-safe: one mutex guards the state; no pserver is called while it
// is held. Lock order: the fleet's mutex before whatever options.save
// takes.
#ifndef SAMPAN_COORDINATOR_FLEET_H_
#define SAMPAN_COORDINATOR_FLEET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/shard_map.h"
#include "grpcpp/grpcpp.h"
#include "proto/coordinator.pb.h"

namespace sampan {

struct FleetOptions {
  uint32_t num_shards = 1;
  // The job's starting size (cluster.num_pservers); owners s % size.
  uint32_t size = 1;
  // Tables per pserver whose shards move (2 with an ASYNC deep job's dense
  // table).
  uint32_t num_tables = 1;
  // Where map versions are reserved ("": the clock alone; tests).
  std::string versions_file;
  // Each SetShards call; each shard copy and each DropShard.
  absl::Duration rpc_deadline = absl::Seconds(10);
  absl::Duration copy_deadline = absl::Minutes(10);
  // Between attempts of a failed move, doubling up to 8x.
  absl::Duration retry_backoff = absl::Milliseconds(500);
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  uint64_t coordinator_epoch = 0;
  std::function<bool()> superseded = [] { return false; };
  // Saves the state durably; the change is not made when it fails.
  std::function<absl::Status(const coord::FleetState&)> save =
      [](const coord::FleetState&) { return absl::OkStatus(); };
};

class Fleet {
 public:
  // Resumes `resumed` when it has owners (a restarted coordinator), else
  // starts with options.size pservers. Starts the mover thread.
  static std::unique_ptr<Fleet> Create(FleetOptions options,
                                       const coord::FleetState& resumed);
  virtual ~Fleet() = default;

  // Pserver `index` (re-)registered at `address`: the map's version moves on
  // when the address changed. Returns what the pserver owns now.
  // INVALID_ARGUMENT for an index outside the fleet; UNAVAILABLE when the
  // version cannot be reserved.
  virtual absl::StatusOr<coord::ShardAssignment> Register(
      uint32_t index, const std::string& address) = 0;
  virtual ShardMap Map() const = 0;
  virtual uint32_t size() const = 0;
  virtual grpc::Status Scale(const coord::ScaleRequest& request,
                             coord::ScaleResponse* response) = 0;
  virtual coord::FleetStatus Status() const = 0;
  virtual coord::FleetState State() const = 0;
  // True once no move or drop runs and none will start until ResumeMoves;
  // false (not paused) if the one under way outlasts `deadline`.
  virtual bool PauseMoves(absl::Time deadline) = 0;
  virtual void ResumeMoves() = 0;
};

}  // namespace sampan

#endif  // SAMPAN_COORDINATOR_FLEET_H_
