// `sampan run --resume`: the job-level restart from a checkpoint.
#ifndef SAMPAN_CLI_RESUME_H_
#define SAMPAN_CLI_RESUME_H_

#include <string>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"

namespace sampan {

// Finds the latest complete checkpoint of `config` (every file verified
// against its manifest), checks that it was taken by a job of the same
// shape, and replaces every pserver's database directory with its snapshot
// there. Returns the checkpoint's directory, which trainers resume from.
// Call before any pserver starts.
absl::StatusOr<std::string> RestoreLatestCheckpoint(const JobConfig& config);

// Replaces every pserver's database directory with a copy of its snapshot
// in the checkpoint directory `dir` (RestoreLatestCheckpoint's last step,
// and a warm start's from init_model). Call before any pserver starts.
// Errors name the directory that could not be restored.
absl::Status RestorePserverSnapshots(const JobConfig& config,
                                     const std::string& dir);

}  // namespace sampan

#endif  // SAMPAN_CLI_RESUME_H_
