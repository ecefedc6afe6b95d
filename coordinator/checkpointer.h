// Checkpointer: the coordinator's half of a coordinated checkpoint.
//
// A checkpoint (one epoch) is taken while every trainer is paused at a step
// boundary with all its pushes acknowledged:
//   1. trainers arrive (CheckpointArrive) on their own every
//      checkpoint.every_steps steps, or when a heartbeat announced a
//      time-triggered epoch (checkpoint.every_seconds); a trainer that has
//      finished its input counts as arrived;
//   2. the last arrival asks every pserver to flush and snapshot its
//      database into <root>/ckpt-<epoch>/pserver-<i> (Checkpoint RPC with a
//      deadline, retried while a restarting pserver is unavailable);
//   3. rank 0's dense state (hybrid jobs) is moved in and the job's config
//      written (job.pbtxt: a later job warm-starting from the checkpoint
//      checks its shape against it), then the manifest with every trainer's
//      data position and every file's size and crc32 is written last; older
//      checkpoints beyond checkpoint.keep go;
//   4. the trainers are released.
// If not every trainer arrives within checkpoint.timeout_seconds, a
// snapshot fails, or a hybrid rank was already past the announced step, the
// epoch is abandoned (its directory removed) and training simply goes on.
//
// Thread-safe; Arrive blocks its gRPC handler thread, bounded by the
// call's deadline and the checkpoint timeout.
#ifndef SAMPAN_COORDINATOR_CHECKPOINTER_H_
#define SAMPAN_COORDINATOR_CHECKPOINTER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "common/shard_map.h"
#include "grpcpp/grpcpp.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"

namespace sampan {

// How a coordinator that was replaced stops acting
// (common/coordinator_epoch.h): its epoch goes with every Checkpoint RPC (a
// pserver that has seen a newer one refuses it), and once `superseded`
// returns true a round in flight writes and deletes nothing more.
struct CheckpointFence {
  uint64_t epoch = 0;
  std::function<bool()> superseded = [] { return false; };
};

// What a checkpoint snapshots: `map` gives the fleet's pservers (addresses,
// "" for one not registered) and shard owners, which the manifest records;
// `pause_moves` (coordinator/fleet.h PauseMoves) is called before the map is
// read and `resume_moves` after the manifest is written, so that no shard
// moves meanwhile. All are called without the checkpointer's lock.
struct CheckpointFleet {
  std::function<ShardMap()> map;
  std::function<bool(absl::Time deadline)> pause_moves = [](absl::Time) {
    return true;
  };
  std::function<void()> resume_moves = [] {};
};

class Checkpointer {
 public:
  static std::unique_ptr<Checkpointer> Create(
      const JobConfig& config, CheckpointFleet fleet,
      CheckpointFence fence = CheckpointFence());
  virtual ~Checkpointer() = default;

  // Records a trainer's step count and fills in the announced epoch.
  virtual void OnHeartbeat(const coord::HeartbeatRequest& request,
                           coord::HeartbeatResponse* response) = 0;

  // The CheckpointArrive RPC.
  virtual grpc::Status Arrive(grpc::ServerContext* context,
                              const coord::CheckpointArriveRequest& request,
                              coord::CheckpointArriveResponse* response) = 0;

  // Checkpoints completed and abandoned since this coordinator started.
  virtual coord::CheckpointStatus Summary() const = 0;
};

}  // namespace sampan

#endif  // SAMPAN_COORDINATOR_CHECKPOINTER_H_
