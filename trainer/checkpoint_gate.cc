#include "trainer/checkpoint_gate.h"

#include <algorithm>
#include <utility>

namespace sampan {

CheckpointGate::CheckpointGate(uint64_t every_steps, uint64_t steps, Take take)
    : every_steps_(every_steps),
      take_(std::move(take)),
      steps_(steps),
      next_due_(every_steps > 0 ? (steps / every_steps + 1) * every_steps : 0) {
}

bool CheckpointGate::Due() const {
  if (every_steps_ > 0 && steps_ >= next_due_) return true;
  return announced_ > done_epoch_ && (at_step_ == 0 || steps_ >= at_step_);
}

absl::Status CheckpointGate::Enter() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](bool* paused) { return !*paused; }, &paused_));
  if (Due()) {
    paused_ = true;
    mu_.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &in_flight_));
    const bool by_announce =
        announced_ > done_epoch_ && (at_step_ == 0 || steps_ >= at_step_);
    const uint64_t epoch = by_announce ? announced_ : 0;
    const bool missed = by_announce && at_step_ > 0 && steps_ > at_step_;
    mu_.Unlock();
    absl::StatusOr<uint64_t> ended = take_(epoch, missed);
    mu_.Lock();
    if (every_steps_ > 0 && steps_ >= next_due_) {
      next_due_ = (steps_ / every_steps_ + 1) * every_steps_;
    }
    if (ended.ok()) done_epoch_ = std::max(done_epoch_, *ended);
    if (by_announce) done_epoch_ = std::max(done_epoch_, epoch);
    paused_ = false;
    ++in_flight_;
    return ended.status();
  }
  ++in_flight_;
  return absl::OkStatus();
}

void CheckpointGate::Took() {
  absl::MutexLock lock(&mu_);
  ++steps_;
}

void CheckpointGate::Leave() {
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

void CheckpointGate::Announce(uint64_t epoch, uint64_t at_step) {
  absl::MutexLock lock(&mu_);
  if (epoch <= done_epoch_ || epoch == announced_) return;
  announced_ = epoch;
  at_step_ = at_step;
}

absl::Status CheckpointGate::Idle(uint64_t waiting) {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](bool* paused) { return !*paused; }, &paused_));
  uint64_t epoch = 0;
  if (announced_ > done_epoch_) {
    epoch = announced_;
  } else if (waiting > done_epoch_) {
    epoch = waiting;
  } else {
    return absl::OkStatus();
  }
  paused_ = true;
  mu_.Await(absl::Condition(
      +[](int* n) { return *n == 0; }, &in_flight_));
  mu_.Unlock();
  absl::StatusOr<uint64_t> ended = take_(epoch, /*missed=*/false);
  mu_.Lock();
  if (ended.ok()) done_epoch_ = std::max(done_epoch_, *ended);
  done_epoch_ = std::max(done_epoch_, epoch);
  paused_ = false;
  return ended.status();
}

uint64_t CheckpointGate::steps() const {
  absl::MutexLock lock(&mu_);
  return steps_;
}

}  // namespace sampan
