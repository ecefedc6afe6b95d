// Local training: one process, an in-process sparse table
// (sparse_table/NewMemoryTable) and the data already in memory. For quality
// and speed work on one machine, and the `sampan train-local` command.
//
// `threads` workers run the step loop of every trainer (trainer/step_loop.h)
// over the epoch's (optionally shuffled) order: dedup -> Pull ->
// CtrModel::Step on a snapshot of the dense weights -> Push -> apply the
// dense gradient (DenseParams, trainer/dense_weights.h); Hogwild, or with
// lockstep_dense one step of `threads` batches, one merged push and one
// dense update. The table serialises per shard and DenseParams by its
// mutex, so workers share no unguarded state.
//
// Evaluation pulls without creating rows. When eval_every > 0 the test set
// is also scored during training (Hogwild: by the worker that crosses the
// mark, while the others keep training; lockstep: between the step's push
// and its dense update, every worker waiting), which fills the curve for
// report.html and logs a line per point ("N examples: test AUC ...").
#ifndef SAMPAN_TRAINER_LOCAL_TRAINER_H_
#define SAMPAN_TRAINER_LOCAL_TRAINER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sparse_table/sparse_table.h"
#include "trainer/data/dataset.h"
#include "trainer/eval/auc.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/dense_optimizer.h"

namespace sampan {

struct LocalTrainOptions {
  CtrModelOptions model;
  // The sparse table; embedding_dim is taken from `model`.
  TableOptions table;
  // The optimizer of the dense weights (deep models only).
  DenseOptimizerOptions dense;
  int threads = 2;
  // Models with dense weights: each step trains `threads` batches on the
  // rows and dense weights as it found them, one push and one dense update
  // for them all (step_loop.h's lockstep; LocalOptionsFromJob sets it for
  // deep models in HYBRID and SYNC, as a `sampan run` rank trains); false:
  // every thread's batch is its own step on a snapshot that may be a few
  // steps stale (Hogwild; ASYNC, LR, FM).
  bool lockstep_dense = false;
  size_t batch_size = 1024;
  int epochs = 1;
  // Shuffle the example order every epoch (seeded by `seed`).
  bool shuffle = true;
  uint64_t seed = 1;
  // Score the test set every this many training examples; 0: at the end only.
  uint64_t eval_every = 0;
  // When set, the trained model is exported here (model_export.h: part 0 of
  // the sparse rows, every training sign's; dense.bin). The caller writes
  // the manifest (FinishModelDir).
  std::string export_dir;
  // When set, scored after every epoch; training stops after the first
  // epoch that does not raise its AUC (early stopping; the weights of that
  // last epoch are kept). Carve it from the training data, never the test.
  const Dataset* validation = nullptr;
};

// One point of the training curve.
struct CurvePoint {
  double seconds = 0;     // since training started
  uint64_t examples = 0;  // trained so far
  double train_loss = 0;  // mean over examples since the previous point
  double examples_per_second = 0;  // since the previous point
  EvalMetrics test;                // rows == 0 when there was no test set
};

struct LocalTrainResult {
  EvalMetrics test;  // at the end; rows == 0 without a test set
  uint64_t examples = 0;
  // Training wall time: excludes the final evaluation, includes those
  // eval_every asks for (they run on a worker thread).
  double train_seconds = 0;
  double examples_per_second = 0;
  double train_loss = 0;  // mean over all training examples
  std::vector<CurvePoint> curve;
  // Per finished epoch, with options.validation.
  std::vector<double> validation_auc;
};

// Trains on `train` and scores `test` (may be null).
absl::StatusOr<LocalTrainResult> TrainLocal(const Dataset& train,
                                            const Dataset* test,
                                            const LocalTrainOptions& options);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_LOCAL_TRAINER_H_
