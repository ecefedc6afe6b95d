// CheckpointGate: pauses a trainer's step loops at a step boundary so that a
// coordinated checkpoint (coordinator/checkpointer.h) sees no step in
// flight and no push unacknowledged.
//
// Workers call Enter() before they take a batch and Leave() after its
// gradients were queued; Took() counts a batch taken. When a checkpoint is
// due (every `every_steps` steps, or an epoch a heartbeat Announce()d), the
// worker that notices waits for the others to leave, runs `take` alone,
// and then lets everyone go on; Enter() blocks while that runs.
//
// Thread-safe.
#ifndef SAMPAN_TRAINER_CHECKPOINT_GATE_H_
#define SAMPAN_TRAINER_CHECKPOINT_GATE_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace sampan {

class CheckpointGate {
 public:
  // Runs one checkpoint: `epoch` is the announced one (0: due by steps);
  // `missed` says the announced step had already passed. Returns the epoch
  // the coordinator says ended (taken or abandoned) or an error that should
  // stop the trainer.
  using Take =
      std::function<absl::StatusOr<uint64_t>(uint64_t epoch, bool missed)>;

  // `steps`: the steps already taken (from the checkpoint resumed from).
  CheckpointGate(uint64_t every_steps, uint64_t steps, Take take);

  absl::Status Enter();
  void Took();
  void Leave();

  // A heartbeat announced `epoch`, to be taken at step `at_step` (0: at the
  // next step boundary).
  void Announce(uint64_t epoch, uint64_t at_step);

  // Between epochs, with no worker in a step (early stopping's waits): takes
  // the checkpoint a heartbeat announced, or the round `waiting` (0: none)
  // that waits for arrivals, where the trainer stands.
  absl::Status Idle(uint64_t waiting);

  uint64_t steps() const;

 private:
  bool Due() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t every_steps_;
  const Take take_;
  mutable absl::Mutex mu_;
  uint64_t steps_ ABSL_GUARDED_BY(mu_);
  uint64_t next_due_ ABSL_GUARDED_BY(mu_);
  uint64_t announced_ ABSL_GUARDED_BY(mu_) = 0, at_step_
                                                ABSL_GUARDED_BY(mu_) = 0;
  uint64_t done_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CHECKPOINT_GATE_H_
