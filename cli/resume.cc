#include "cli/resume.h"

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "coordinator/checkpoint_store.h"
#include "sparse_table/job_options.h"
#include "sparse_table/sparse_table.h"

namespace sampan {

absl::StatusOr<std::string> RestoreLatestCheckpoint(const JobConfig& config) {
  absl::StatusOr<std::string> dir =
      LatestCompleteCheckpoint(CheckpointRoot(config));
  if (!dir.ok()) return dir.status();
  absl::StatusOr<coord::CheckpointManifest> m = ReadManifest(*dir, false);
  if (!m.ok()) return m.status();
  if (m->num_pservers() != config.cluster().num_pservers() ||
      m->num_trainers() != config.cluster().num_trainers()) {
    return absl::FailedPreconditionError(absl::StrCat(
        *dir, " was taken with ", m->num_pservers(), " pservers and ",
        m->num_trainers(), " trainers; this job has ",
        config.cluster().num_pservers(), " and ",
        config.cluster().num_trainers()));
  }
  for (uint32_t i = 0; i < config.cluster().num_pservers(); ++i) {
    const std::string snapshot = absl::StrCat(*dir, "/pserver-", i);
    const std::string data_dir = TableOptionsFromJob(config, i).data_dir;
    if (absl::Status s = RestoreSnapshot(snapshot, data_dir); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("restoring ", data_dir, " from ", snapshot,
                                 ": ", s.message()));
    }
  }
  return *dir;
}

}  // namespace sampan
