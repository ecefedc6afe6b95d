// trainer: one rank of a training job.
//
// A trainer registers with the coordinator, waits for the cluster spec, then
// runs `threads_per_trainer` Hogwild workers over its part of the training
// files (byte ranges split by rank, see CriteoReader). Each worker loops:
// read a batch -> dedup its keys -> pull rows from the pservers -> forward
// and backward -> push summed gradients asynchronously. Workers share no
// model state of their own; the pservers apply pushes as they arrive.
//
// After the last epoch every trainer flushes its pushes and meets the others
// at a barrier; each exports its share of the model to <output_dir>/model
// (trainer/part_export.h), and rank 0 then evaluates on the test files
// (pulls without creating rows) and writes <output_dir>/result.txt.
//
// Deep models (DNN, Wide&Deep, DeepFM, DCN-v2) train as model.mode says:
// HYBRID (the default): one step loop per trainer whose step's sparse
// gradients are summed across its threads and the ranks, each key pushed
// once by the rank that owns it (trainer/rank_merge.h), and dense weights
// averaged across trainers by allreduce every step and kept bitwise
// identical (trainer/hybrid_dense.h); each rank writes the final
// weights' hash to <output_dir>/dense_hash-<rank>.txt. SYNC: the same, and
// each step's pushes are flushed before its allreduce, so no trainer pulls
// for step k+1 before every push of step k is applied (a barrier per step).
// ASYNC: Hogwild workers as for FM, the dense weights rows on the pservers
// pulled and pushed with each batch (trainer/async_dense.h).
//
// Progress (examples, loss, streaming AUC, fraction done) goes to the
// coordinator with every heartbeat. Failure to reach the coordinator for
// longer than heartbeat_timeout_seconds, a failed pull or push, or a bad-row
// fraction above data.max_bad_fraction ends the trainer with an error.
#ifndef SAMPAN_TRAINER_TRAINER_H_
#define SAMPAN_TRAINER_TRAINER_H_

#include <string>

#include "absl/status/status.h"
#include "proto/job.pb.h"
#include "trainer/report.h"  // ResultPath

namespace sampan {

// Runs rank `rank` of the job to completion. With `checkpoint_dir` (a
// complete checkpoint, coordinator/checkpoint_store.h) it resumes at the
// data position recorded there for this rank.
//
// Checkpoints (checkpoint.every_steps / every_seconds): the workers pause at
// a step boundary, every push is acknowledged, and the trainer arrives at
// the coordinator with its position (trainer/checkpoint_gate.h); rank 0 of
// a hybrid job also saves the dense weights and optimizer state.
// `generation` numbers the hybrid collective group: ranks restarted together
// after a crash join a new one (trainer/hybrid_dense.h).
absl::Status RunTrainer(const JobConfig& config, int rank,
                        const std::string& coordinator_address,
                        const std::string& checkpoint_dir = "",
                        uint64_t generation = 0);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_TRAINER_H_
