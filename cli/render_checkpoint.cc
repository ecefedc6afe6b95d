#include "cli/render_checkpoint.h"

#include "absl/strings/str_cat.h"
#include "common/config.h"

namespace sampan {

absl::StatusOr<CheckpointVolume> ResolveCheckpointVolume(
    const JobConfig& job, const std::string& name) {
  CheckpointVolume v;
  const bool stream = !job.data().stream().root().empty();
  if (!TakesCheckpoints(job) && !stream) return v;
  const KubernetesConfig& k = job.kubernetes();
  if (!k.checkpoint_claim().empty() && !k.checkpoint_storage().empty()) {
    return absl::InvalidArgumentError(
        "kubernetes.checkpoint_claim and kubernetes.checkpoint_storage: set "
        "one (an existing claim, or the size of one to create), not both");
  }
  if (k.checkpoint_claim().empty() && k.checkpoint_storage().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kubernetes.checkpoint_claim or kubernetes.checkpoint_storage: the "
        "job ",
        stream ? "publishes model versions (data.stream), which every "
                 "trainer writes its part of and predictors read"
               : "takes checkpoints "
                 "(checkpoint.every_steps/every_seconds/every_passes), "
                 "which the coordinator, every pserver and every trainer "
                 "write to and read back",
        " from one directory; on Kubernetes that needs a shared "
        "ReadWriteMany volume: name an existing PersistentVolumeClaim "
        "(checkpoint_claim) or give the size of one to create "
        "(checkpoint_storage, with checkpoint_storage_class)"));
  }
  v.shared = true;
  v.render_claim = k.checkpoint_claim().empty();
  v.claim = v.render_claim ? absl::StrCat(name, "-checkpoints")
                           : k.checkpoint_claim();
  return v;
}

Yaml CheckpointClaimSpec(const KubernetesConfig& k8s) {
  Yaml spec = Yaml::Map(
      {{"accessModes", Yaml::List({"ReadWriteMany"})},
       {"resources",
        Yaml::Map({{"requests",
                    Yaml::Map({{"storage", k8s.checkpoint_storage()}})}})}});
  if (!k8s.checkpoint_storage_class().empty()) {
    spec.Set("storageClassName", k8s.checkpoint_storage_class());
  }
  return spec;
}

}  // namespace sampan
