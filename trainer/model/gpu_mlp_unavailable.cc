// Stands in for the cuBLAS MLP in builds without the CUDA toolkit.
#include "trainer/model/gpu_mlp.h"

namespace sampan {

absl::Status GpuMlp::Available() {
  return absl::UnavailableError(
      "gpu dense path: this build has no CUDA toolkit (none found at build "
      "time)");
}

absl::StatusOr<std::unique_ptr<GpuMlp>> GpuMlp::Create(
    const std::vector<Linear>&, size_t, const GpuMlpOptions&) {
  return Available();
}

}  // namespace sampan
