// How the coordinator's handlers wait (a barrier's members, a key not yet
// set, the pservers of a cluster spec, a checkpoint round's end).
//
// Promises: AwaitForCall returns once `cond` holds, `deadline` passes, or
// the call is cancelled: its client went away (a trainer killed while it
// waited) or the server is shutting down past its grace period, which
// cancels every call still open. So no handler outlives the caller it
// answers, and none holds up the coordinator's shutdown (a stopped job's
// coordinator still writes its frozen job page before it exits). The call
// is looked at every kCallCheck.
#ifndef SAMPAN_COORDINATOR_CALL_WAIT_H_
#define SAMPAN_COORDINATOR_CALL_WAIT_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace sampan {

inline constexpr absl::Duration kCallCheck = absl::Milliseconds(100);

// With `mu` held: waits as above; returns whether `cond` holds.
bool AwaitForCall(absl::Mutex* mu, const absl::Condition& cond,
                  absl::Time deadline, grpc::ServerContext* context)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

// The status of a wait that ended without its condition: CANCELLED when
// the call was, DEADLINE_EXCEEDED otherwise; `what` says what was missing.
grpc::Status WaitFailed(grpc::ServerContext* context, const std::string& what);

// With `mu` held: waits on `cv` until `done()`, `deadline` or the call's
// cancellation, as above; returns done().
template <typename Done>
bool WaitForCall(absl::CondVar* cv, absl::Mutex* mu, Done done,
                 absl::Time deadline, grpc::ServerContext* context)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
  while (!done() && absl::Now() < deadline && !context->IsCancelled()) {
    cv->WaitWithDeadline(mu, std::min(deadline, absl::Now() + kCallCheck));
  }
  return done();
}

}  // namespace sampan

#endif  // SAMPAN_COORDINATOR_CALL_WAIT_H_
