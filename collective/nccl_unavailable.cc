// Stands in for the NCCL backend in builds without the CUDA toolkit.
#include "collective/backends.h"

namespace sampan {
namespace collective {

absl::Status NcclAvailable() {
  return absl::UnavailableError(
      "nccl: this build has no CUDA toolkit (none found at build time)");
}

absl::StatusOr<std::unique_ptr<Communicator>> NewNcclCommunicator(
    const CommunicatorOptions&) {
  return NcclAvailable();
}

}  // namespace collective
}  // namespace sampan
