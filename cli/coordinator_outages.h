// How long `sampan run` goes without answers from its coordinator: from the
// coordinator's death (the launcher restarts it) or the first JobStatus it
// did not answer (stopped, overloaded) to its next answer. The launcher
// reports each outage when it ends and their total in the job's summary.
//
// Not thread-safe: the launcher's supervising loop owns it.
#ifndef SAMPAN_CLI_COORDINATOR_OUTAGES_H_
#define SAMPAN_CLI_COORDINATOR_OUTAGES_H_

#include "absl/time/time.h"

namespace sampan {

class CoordinatorOutages {
 public:
  // The coordinator died at `when`.
  void Died(absl::Time when) {
    if (since_ == absl::InfiniteFuture()) since_ = when;
  }

  // A JobStatus call made at `when` was answered (`ok`) or not. Returns the
  // length of the outage an answer ended; zero when none was running.
  absl::Duration Called(bool ok, absl::Time when) {
    if (!ok) {
      Died(when);
      return absl::ZeroDuration();
    }
    if (since_ == absl::InfiniteFuture()) return absl::ZeroDuration();
    const absl::Duration out = std::max(absl::ZeroDuration(), when - since_);
    since_ = absl::InfiniteFuture();
    total_ += out;
    ++count_;
    return out;
  }

  // An outage is running (the launcher then asks more often).
  bool out() const { return since_ != absl::InfiniteFuture(); }
  absl::Duration total() const { return total_; }
  int count() const { return count_; }

 private:
  absl::Time since_ = absl::InfiniteFuture();
  absl::Duration total_;
  int count_ = 0;
};

}  // namespace sampan

#endif  // SAMPAN_CLI_COORDINATOR_OUTAGES_H_
