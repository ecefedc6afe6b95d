// coordinator: the job master.
//
// It holds the job's membership (which pserver serves at which address, which
// trainers are alive), hands out the cluster spec once every pserver has
// registered, releases named barriers, stores small rendezvous values, and
// collects trainer progress from heartbeats so `sampan run` and operators can
// see one view of the job.
//
// Every wait (cluster spec, barrier, key) is bounded by the caller's RPC
// deadline: a missing member turns into DEADLINE_EXCEEDED, never a hang.
// It holds the job's shard map (common/shard_map.h) and issues each trainer
// incarnation its writer id. Membership, progress and checkpoint rounds live
// in memory; the counters that must never go back (coordinator/id_source.h:
// writer ids, shard map versions) are reserved in files under
// <checkpoint root>/coordinator/, and the rendezvous state (keys, released
// barriers) is kept there too (below). A restarted coordinator rebuilds its
// membership from members re-registering (they do so on every heartbeat
// that finds them unknown); its map versions continue above the old ones,
// so clients follow its maps; a checkpoint round it was running is
// abandoned (the trainers go on and the next round takes one).
#ifndef SAMPAN_COORDINATOR_COORDINATOR_H_
#define SAMPAN_COORDINATOR_COORDINATOR_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "proto/coordinator.grpc.pb.h"
#include "proto/job.pb.h"

namespace sampan {

// Creates the service for `config`'s cluster sizes. Thread-safe: gRPC calls
// its handlers from many threads; one mutex guards all state.
//
// With a `launch_id` (one per launch of the job: `sampan run` makes one and
// passes the same to a coordinator it restarts), the key-value store and the
// barriers released are also kept in <checkpoint root>/coordinator/state.pb,
// written durably before a put is acknowledged or a barrier's waiters are
// released; a coordinator started with the same launch id resumes from it,
// so members that retry their calls across the restart (coordinator/
// client.h) see what they saw before. A state of another launch is ignored.
//
// Fencing (common/coordinator_epoch.h): each coordinator takes an epoch above
// every earlier one's (<checkpoint root>/coordinator/coordinator_epochs) and
// sends it with every answer and every call to a pserver. Once a member
// shows it a newer epoch, or it finds the state file written by a newer
// one, it is superseded: every RPC answers UNAVAILABLE, it writes and
// deletes nothing more, and its process should exit.
class CoordinatorService : public coord::Coordinator::Service {
 public:
  virtual uint64_t epoch() const = 0;
  virtual bool superseded() const = 0;
  // Reads the state file (with a launch id) and is superseded if a newer
  // coordinator wrote it: what a coordinator woken up after its replacement
  // took over learns within a tick even if no member calls it. Returns
  // superseded().
  virtual bool CheckSuperseded() = 0;
};

std::unique_ptr<CoordinatorService> NewCoordinatorService(
    const JobConfig& config, const std::string& launch_id = "");

// Writes the state a coordinator of launch `launch_id` starts from with
// `fleet` as its fleet (a resume from a checkpoint of a rescaled fleet:
// cli/resume.h). Call before the coordinator starts.
absl::Status SeedCoordinatorState(const JobConfig& config,
                                  const std::string& launch_id,
                                  const coord::FleetState& fleet);

}  // namespace sampan

#endif  // SAMPAN_COORDINATOR_COORDINATOR_H_
