#include "coordinator/call_wait.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace sampan {

bool AwaitForCall(absl::Mutex* mu, const absl::Condition& cond,
                  absl::Time deadline, grpc::ServerContext* context) {
  for (;;) {
    if (mu->AwaitWithDeadline(cond,
                              std::min(deadline, absl::Now() + kCallCheck))) {
      return true;
    }
    if (absl::Now() >= deadline || context->IsCancelled()) return false;
  }
}

grpc::Status WaitFailed(grpc::ServerContext* context, const std::string& what) {
  if (context->IsCancelled()) {
    return grpc::Status(grpc::StatusCode::CANCELLED,
                        what + " (the call was cancelled while it waited)");
  }
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, what);
}

}  // namespace sampan
