// PassCatalog: the passes of a continuous-training input (data.stream) that
// are ready to train, read from the filesystem.
//
// A pass is a directory under stream.root whose path matches stream.pattern
// (common/pass_pattern.h) and that holds stream.done_marker. It is never
// listed before the marker exists, so a writer fills the directory first and
// writes the marker last. Its parts are the directory's regular files whose
// names do not start with "_" or "." (Hadoop's convention for markers and
// temporary files), sorted by name; gzip parts read as any other.
//
// Stateless and thread-compatible: every call lists the root again.
#ifndef SAMPAN_TRAINER_DATA_PASS_CATALOG_H_
#define SAMPAN_TRAINER_DATA_PASS_CATALOG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/pass_pattern.h"
#include "proto/job.pb.h"

namespace sampan {

struct ReadyPass {
  std::string name;  // path under the root, e.g. "20261201/05"
  PassTime time;
  std::vector<std::string> files;  // full paths, sorted
  double ready_unix_seconds = 0;   // the marker's modification time
};

// The ready passes within [start_pass, end_pass] (either may be empty),
// ordered by time, then name. NotFound naming the root when it does not
// exist; InvalidArgument for a bad pattern.
absl::StatusOr<std::vector<ReadyPass>> ListReadyPasses(
    const StreamConfig& stream);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_PASS_CATALOG_H_
