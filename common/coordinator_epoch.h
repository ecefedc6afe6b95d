// Fencing a coordinator that was replaced: the coordinator epoch.
//
// Each coordinator incarnation of a job takes a number above every earlier
// incarnation's (coordinator/id_source.h, kept beside its state), its epoch.
// A coordinator that was only stopped (SIGSTOP, a partitioned node) may wake
// up after a replacement took over; it must not act then. So:
//   - a coordinator puts its epoch in the initial metadata of every answer,
//     and in the metadata of every call it makes to a pserver;
//   - members remember the highest epoch they have seen and send it with
//     every call; an answer from a lower epoch is ignored (the call is
//     retried, as against a coordinator that is down);
//   - a coordinator shown a higher epoch than its own stops acting (it
//     answers UNAVAILABLE and its process exits), and a pserver refuses a
//     coordinator's call that carries a lower epoch than one it has seen.
// Epoch 0 means "none seen" and fences nothing.
#ifndef SAMPAN_COMMON_COORDINATOR_EPOCH_H_
#define SAMPAN_COMMON_COORDINATOR_EPOCH_H_

#include <grpcpp/support/string_ref.h>

#include <cstdint>
#include <map>

#include "common/grpc_status.h"

namespace sampan {

inline constexpr char kCoordinatorEpochKey[] = "sampan-coordinator-epoch";

// The epoch in `metadata` under kCoordinatorEpochKey; 0 when absent or not
// a number.
inline uint64_t CoordinatorEpochIn(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  return Uint64InMetadata(metadata, kCoordinatorEpochKey);
}

// Raises `newest` to `epoch` if it is higher (a lock-free max).
template <typename Atomic>
void RaiseEpoch(Atomic& newest, uint64_t epoch) {
  uint64_t seen = newest.load();
  while (epoch > seen && !newest.compare_exchange_weak(seen, epoch)) {
  }
}

}  // namespace sampan

#endif  // SAMPAN_COMMON_COORDINATOR_EPOCH_H_
