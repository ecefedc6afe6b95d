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
// incarnation its writer id. State lives in memory, but for the counters
// that must never go back (coordinator/id_source.h: writer ids, shard map
// versions), reserved in files under <checkpoint root>/coordinator/. A
// restarted coordinator starts empty and members re-register (they do so on
// every heartbeat that finds them unknown); its map versions continue above
// the old ones, so clients follow its maps.
#ifndef SAMPAN_COORDINATOR_COORDINATOR_H_
#define SAMPAN_COORDINATOR_COORDINATOR_H_

#include <memory>

#include "proto/coordinator.grpc.pb.h"
#include "proto/job.pb.h"

namespace sampan {

// Creates the service for `config`'s cluster sizes. Thread-safe: gRPC calls
// its handlers from many threads; one mutex guards all state.
std::unique_ptr<coord::Coordinator::Service> NewCoordinatorService(
    const JobConfig& config);

}  // namespace sampan

#endif  // SAMPAN_COORDINATOR_COORDINATOR_H_
