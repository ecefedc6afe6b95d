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

}  // namespace sampan

#endif  // SAMPAN_CLI_RESUME_H_
