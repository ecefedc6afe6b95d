// EarlyStop: validation-slice early stopping for `sampan run` batch jobs
// (data.validation_fraction), the same rule as train-local's: training stops
// after the first epoch whose validation AUC does not rise over the epoch
// before's (that epoch's weights are kept: no rollback).
//
// The trainer's step loop ends at every epoch's end (InputQueue stops there;
// lockstep ranks stop together when the first runs out). Every rank then,
// with its pushes flushed, calls EndEpoch(e):
//   1. meets the others at barrier "validate-<e>" (the model is then what
//      every rank trained);
//   2. unless the epoch's decision is already in the coordinator's
//      key-value store (a rank resumed past it), scores its share of the
//      validation slice (`score`) and puts it as "validation/<e>/<rank>";
//   3. rank 0 merges the ranks' scores (MergePassScores), compares the AUC
//      with epoch e-1's decision and puts epoch e's: "validation/<e>", an
//      EpochValidation;
//   4. every rank reads the decision.
// Barriers, puts and decisions are the same when done twice, so a trainer
// restarted from a checkpoint (even one taken between epochs) goes through
// the epochs it repeats without deciding them again.
//
// Its waits are idle: each is cut into one-second slices, and between them
// `idle` runs (the trainer arrives at checkpoint rounds announced meanwhile,
// where it stands, so a round never waits for a rank that waits here). A
// wait ends in an error when `failed` is set (the trainer's coordinator is
// lost) or when some trainer has had no heartbeat for
// cluster.wait_timeout_seconds (it died and was not restarted): a dead peer
// is an error, never a hang.
//
// Thread-compatible: one thread (the trainer's) calls EndEpoch.
#ifndef SAMPAN_TRAINER_EARLY_STOP_H_
#define SAMPAN_TRAINER_EARLY_STOP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/client.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"

namespace sampan {

struct EarlyStopOptions {
  const JobConfig* config = nullptr;
  int rank = 0;
  CoordinatorClient* coordinator = nullptr;
  // This rank's share of the validation slice, scored by the model as it is.
  std::function<absl::StatusOr<coord::PassScore>()> score;
  // Runs between the slices of every wait.
  std::function<absl::Status()> idle = [] { return absl::OkStatus(); };
  const std::atomic<bool>* failed = nullptr;  // may be null
};

class EarlyStop {
 public:
  explicit EarlyStop(EarlyStopOptions options);

  // Ends epoch `epoch` (0-based) on this rank; the decision every rank
  // reads (stop() true: train no further epoch).
  absl::StatusOr<coord::EpochValidation> EndEpoch(uint32_t epoch);

  // Rank 0, after training: appends every decided epoch's validation AUC
  // to the job's result file (key=value lines): validation_auc (per epoch,
  // comma-separated), epochs_trained and stopped_early.
  absl::Status AppendResult(const std::string& path);

  static std::string DecisionKey(uint32_t epoch);

 private:
  // Calls `attempt(slice)` until it returns anything but DEADLINE_EXCEEDED;
  // `what` names the wait in errors.
  absl::Status IdleWait(
      const std::string& what,
      const std::function<absl::Status(absl::Duration)>& attempt);
  absl::StatusOr<coord::EpochValidation> Decide(uint32_t epoch);
  absl::StatusOr<coord::EpochValidation> ReadDecision(uint32_t epoch,
                                                      bool wait);

  const EarlyStopOptions o_;
  const int trainers_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_EARLY_STOP_H_
