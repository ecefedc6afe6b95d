// Retry policy shared by pulls, pushes, shrinks and coordinator calls: which
// failures are transient, and exponential backoff with jitter bounded by a
// total budget.
#ifndef SAMPAN_COMMON_RETRY_H_
#define SAMPAN_COMMON_RETRY_H_

#include <grpcpp/grpcpp.h>

#include <random>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace sampan {

// Failures that a later attempt may not meet: the server is down, slow or
// shedding load, or shut down with the call in flight (CANCELLED: a pserver
// restarting or leaving a rescaled fleet; Sampan's clients never cancel
// their own calls). Anything else (a bad request) will fail again.
inline bool IsTransient(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE ||
         code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED ||
         code == grpc::StatusCode::ABORTED ||
         code == grpc::StatusCode::CANCELLED;
}

// Failures after which a call that must not run twice (Shrink) may be sent
// again: the server refused it before running it (its queue was full), or
// it was not reached. (UNAVAILABLE can also mean the server went away while
// running it; it then ran at most partly, on a server that restarts.)
inline bool IsRefusedOrUnreached(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE ||
         code == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

// Not thread-safe: one per retrying call.
class Backoff {
 public:
  Backoff(absl::Duration initial, absl::Duration max, absl::Duration budget)
      : delay_(initial), max_(max), give_up_(absl::Now() + budget) {}

  // Sleeps before the next attempt; false (without sleeping) once the budget
  // is spent. Jitter spreads the retries of many clients after an outage.
  bool Wait() {
    absl::Duration sleep;
    if (!Next(&sleep)) return false;
    absl::SleepFor(sleep);
    return true;
  }

  // As Wait, for a caller that waits itself (on a condition that may cut
  // the wait short): sets *sleep to the time to wait before the next
  // attempt, or returns false once the budget is spent.
  bool Next(absl::Duration* sleep) {
    const absl::Time now = absl::Now();
    if (now >= give_up_) return false;
    // Seeded here rather than in the constructor: nearly every call succeeds
    // at once, and std::random_device costs a system call or more (profiled
    // at 5% of a load client's CPU when every Pull and Push built one).
    if (!seeded_) {
      rng_.seed(std::random_device{}());
      seeded_ = true;
    }
    std::uniform_real_distribution<double> jitter(0.5, 1.0);
    *sleep = delay_ * jitter(rng_);
    if (now + *sleep > give_up_) *sleep = give_up_ - now;
    delay_ = std::min(delay_ * 2, max_);
    return true;
  }

 private:
  absl::Duration delay_;
  const absl::Duration max_;
  const absl::Time give_up_;
  bool seeded_ = false;
  std::minstd_rand rng_;
};

}  // namespace sampan

#endif  // SAMPAN_COMMON_RETRY_H_
