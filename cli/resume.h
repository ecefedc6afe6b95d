// `sampan run --resume`: the job-level restart from a checkpoint.
#ifndef SAMPAN_CLI_RESUME_H_
#define SAMPAN_CLI_RESUME_H_

#include <string>

#include "absl/status/statusor.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"

namespace sampan {

// Finds the latest complete checkpoint of `config` (every file verified
// against its manifest), checks that it was taken by a job of the same
// shape, and replaces every pserver's database directory with its snapshot
// there. Returns the checkpoint's directory, which trainers resume from.
// Call before any pserver starts.
// *fleet as RestorePserverSnapshots sets it.
absl::StatusOr<std::string> RestoreLatestCheckpoint(const JobConfig& config,
                                                    coord::FleetState* fleet);

// Replaces every pserver's database directory with a copy of its snapshot
// in the checkpoint directory `dir` (RestoreLatestCheckpoint's last step,
// and a warm start's from init_model). Call before any pserver starts.
// Errors name the directory that could not be restored. A checkpoint of a
// rescaled fleet (its manifest's owners are not the first map) restores
// every pserver it has and sets *fleet to its size and owners, which the
// coordinator must start from (SeedCoordinatorState); otherwise *fleet is
// left empty.
absl::Status RestorePserverSnapshots(const JobConfig& config,
                                     const std::string& dir,
                                     coord::FleetState* fleet);

// The fleet a checkpoint's manifest records, when it is not the job's first
// map (shard s on pserver s % cluster.num_pservers); empty otherwise.
coord::FleetState FleetOfCheckpoint(const JobConfig& config,
                                    const coord::CheckpointManifest& manifest);

}  // namespace sampan

#endif  // SAMPAN_CLI_RESUME_H_
