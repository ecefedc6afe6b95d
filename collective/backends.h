// Internal: the backend constructors behind NewCommunicator.
#ifndef SAMPAN_COLLECTIVE_BACKENDS_H_
#define SAMPAN_COLLECTIVE_BACKENDS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "collective/communicator.h"
#include "coordinator/client.h"

namespace sampan {
namespace collective {

absl::StatusOr<std::unique_ptr<Communicator>> NewGlooCommunicator(
    const CommunicatorOptions& options);

// Every rank must be on this host (see SameHost in communicator.cc).
absl::StatusOr<std::unique_ptr<Communicator>> NewShmCommunicator(
    const CommunicatorOptions& options, CoordinatorClient* client);

// In nccl_communicator.cc where CUDA exists, else nccl_unavailable.cc.
absl::StatusOr<std::unique_ptr<Communicator>> NewNcclCommunicator(
    const CommunicatorOptions& options);

}  // namespace collective
}  // namespace sampan

#endif  // SAMPAN_COLLECTIVE_BACKENDS_H_
