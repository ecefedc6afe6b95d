// The checkpoint volume of a rendered Kubernetes job.
//
// A checkpoint is written by three kinds of pods: the coordinator (MANIFEST,
// and the rename of rank 0's dense file into ckpt-<epoch>/), every pserver
// (its RocksDB snapshot, through the Checkpoint RPC, at a path the
// coordinator names) and every trainer (dense-step*.bin; a restarted one
// reads the MANIFEST back). So a job with `checkpoint:` needs one
// ReadWriteMany volume mounted at the same path in all of them, and the
// rendered job's checkpoint.dir pointing there (a directory per job, so
// that jobs can share one existing claim). A data.stream job needs the same
// volume for its model versions (every trainer writes its part of each,
// rank 0 publishes, predictors read): its data.stream.versions_dir is
// <kCheckpointMount>/<name>/versions.
#ifndef SAMPAN_CLI_RENDER_CHECKPOINT_H_
#define SAMPAN_CLI_RENDER_CHECKPOINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "cli/render_yaml.h"
#include "common/config.h"  // TakesCheckpoints
#include "proto/job.pb.h"

namespace sampan {

// Where every pod mounts the shared checkpoint volume; the rendered job's
// checkpoint.dir is <kCheckpointMount>/<job's Kubernetes name>.
inline constexpr char kCheckpointMount[] = "/var/lib/sampan-checkpoints";

struct CheckpointVolume {
  bool shared = false;  // checkpoints or versions: mount `claim` everywhere
  std::string claim;    // PersistentVolumeClaim name
  bool render_claim =
      false;  // render creates it (kubernetes.checkpoint_storage)
};

// The volume for a job whose Kubernetes name is `name`. InvalidArgument,
// naming the fields, when the job checkpoints but has neither
// kubernetes.checkpoint_claim nor kubernetes.checkpoint_storage, or both.
// A job without checkpoints gets {shared = false}, whatever is set.
absl::StatusOr<CheckpointVolume> ResolveCheckpointVolume(
    const JobConfig& job, const std::string& name);

// The spec of the ReadWriteMany claim render creates.
Yaml CheckpointClaimSpec(const KubernetesConfig& k8s);

}  // namespace sampan

#endif  // SAMPAN_CLI_RENDER_CHECKPOINT_H_
