// A trainer rank's arrivals at the job's checkpoints (the coordinator's
// rounds, docs/architecture.md "Checkpoints"): the position the rank
// stands at, rank 0's dense state when the ranks step together (HYBRID,
// SYNC), and the wait for the round to end. A coordinator that cannot be
// reached abandons only that checkpoint: it is logged, training goes on.
//
// Thread safety: one call at a time (the trainer's thread, or its
// CheckpointGate's callback while no batch is in flight).
#ifndef SAMPAN_TRAINER_RANK_CHECKPOINT_H_
#define SAMPAN_TRAINER_RANK_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/client.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"
#include "trainer/rank_dense.h"

namespace sampan {

struct RankCheckpointOptions {
  const JobConfig* config = nullptr;
  int rank = 0;
  CoordinatorClient* coordinator = nullptr;  // not owned
  RankDense* dense = nullptr;                // not owned
};

// " (+N rows of its shuffle window)" when `p` stands inside one, else "":
// for log lines that name a position.
std::string WindowNote(const coord::DataPosition& p);

class RankCheckpoints {
 public:
  explicit RankCheckpoints(const RankCheckpointOptions& options);

  // Round `epoch` in mid-pass (every push acknowledged before the call):
  // arrives at `position` (its steps set) and waits for the round's end;
  // rank 0 of a lockstep job saves the dense state first unless `missed`.
  // Returns the round the coordinator answered for (`epoch` when it could
  // not be reached), or the dense state's save error.
  absl::StatusOr<uint64_t> ArriveMidPass(uint64_t epoch, bool missed,
                                         const coord::DataPosition& position);

  // Out of input: the rank counts as arrived at every later round, and its
  // position (set finished here) says so, so a resume does not train its
  // part again.
  void ArriveFinished(coord::DataPosition position);

  // checkpoint.every_passes: after `pass` is published (rank 0 publishes
  // before it arrives), so the checkpoint holds the tables as the pass
  // left them and a resume goes on with the next pass. `rows` and `steps`:
  // trained so far.
  void ArriveAtPassEnd(const coord::StreamPass& pass, uint64_t rows,
                       uint64_t steps);

 private:
  absl::StatusOr<coord::CheckpointArriveResponse> Arrive(
      const coord::CheckpointArriveRequest& request);
  // Rank 0 of a lockstep job (HYBRID, SYNC: every rank holds the same dense
  // state) saves the dense weights and optimizer state at `steps` and marks
  // `req`; others have nothing to save (ASYNC keeps it in pserver rows,
  // which the snapshots hold).
  absl::Status SaveDense(uint64_t steps, coord::CheckpointArriveRequest* req);

  const RankCheckpointOptions options_;
  // A round's own time limit plus a call's deadline each way.
  const absl::Duration timeout_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_RANK_CHECKPOINT_H_
