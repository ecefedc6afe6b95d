// StepLoop: the one pull -> step -> push loop of every trainer: `sampan
// train-local` and every mode of `sampan run` (Hogwild LR/FM, HYBRID, SYNC,
// ASYNC) run this code and no other.
//
// A batch's work (Worker::Train) is always the same: dedup its signs and
// count each key's shows and clicks (BatchKeys) -> pull their rows
// (SparseStore) -> CtrModel::Step on the step's dense weights -> push the
// summed sparse gradients as one PushBatch (a lockstep crew: each key once
// a step, below) -> tell the observer. Word vectors
// (WordModel) take the same path with WordModel::Plan choosing the keys and
// WordModel::Train computing the gradients.
//
// How batches make steps depends only on the dense weights (DenseWeights):
//  - per batch (lockstep() false: no dense weights, train-local's Hogwild
//    DenseParams, ASYNC's pserver rows): `threads` loops, each taking one
//    batch per step; a step begins by reading the weights and ends by
//    applying (or pushing) its dense gradient;
//  - lockstep (HYBRID, SYNC; train-local's deep models but in ASYNC): one
//    loop per rank, each step `threads` batches trained at once by a crew of
//    threads on the rows and weights as the step found them; their sparse
//    gradients are summed per key and each key pushed once (the crew sums
//    and pushes in parallel, each thread its part of the keys, by a hash of
//    the key), their dense gradients
//    summed and then averaged across ranks; every rank takes the same steps.
//    A step thus learns as one batch of all its examples would.
//  - across ranks (RankMerge, `sampan run` HYBRID and SYNC with 2+
//    trainers): each step's per-rank sums are summed again across the
//    ranks and each key is pushed once, by the rank that owns it, so the
//    ranks' step learns as one batch of all their examples too.
// With a CheckpointGate every step passes it (Enter, Took, Leave), so a
// checkpoint sees no step in flight.
//
// Thread safety: Run() once; the sources, rows, weights and observer it is
// given must be safe to use from `threads` threads at once (lockstep
// weights are used by the one loop thread only).
#ifndef SAMPAN_TRAINER_STEP_LOOP_H_
#define SAMPAN_TRAINER_STEP_LOOP_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sparse_table/sparse_table.h"
#include "trainer/batch_keys.h"
#include "trainer/checkpoint_gate.h"
#include "trainer/data/batch.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/word2vec.h"
#include "trainer/step_gradients.h"

namespace sampan {

class PsClient;

// Where the sparse rows live. Implementations are thread-safe.
class SparseStore {
 public:
  virtual ~SparseStore() = default;
  // Reads keys.size() rows (row_dim floats each) into `rows`, creating them
  // when `training`; `positions` (may be null) records where, for Push.
  virtual absl::Status Pull(absl::Span<const uint64_t> keys, bool training,
                            float* rows, PullPositions* positions) = 0;
  // Applies (a table) or queues (the fleet) one batch's gradients.
  virtual absl::Status Push(const PushBatch& push) = 0;
  // Waits until every push is applied.
  virtual absl::Status Flush() = 0;
};

// An in-process table (train-local); not owned.
std::unique_ptr<SparseStore> TableRows(SparseTable* table);
// The pserver fleet; `row_dim` floats per key. Not owned.
std::unique_ptr<SparseStore> FleetRows(PsClient* client, int row_dim);

// One thread's reusable buffers: a batch, its keys, rows and gradients.
struct Worker : BatchKeys {
  Batch batch;
  std::vector<float> rows, grads, probs;
  double loss = 0;  // the last batch's summed log loss
  CtrModel::Workspace ws;
  WordModel::Workspace words;
  PullPositions positions;
};

// The dense weights as a step sees them.
class DenseWeights {
 public:
  // One loop's view of the weights: begun, used by `group` workers, ended.
  class Step {
   public:
    virtual ~Step() = default;
    // Starts a step of `batches` batches (0: this loop is out of data) and
    // `examples` examples: weights() are valid and grads(i) zeroed.
    virtual absl::Status Begin(int batches, size_t examples) = 0;
    virtual const float* weights() = 0;
    // Where worker i adds its gradient (summed over its examples).
    virtual float* grads(int worker) = 0;
    // The hook for CtrModel::Step of worker 0, or null.
    virtual const CtrModel::GradReadyFn* grad_ready() { return nullptr; }
    // Applies the step's gradient. False when training must end (lockstep:
    // some rank is out of data); per batch: whether the step had batches.
    virtual absl::StatusOr<bool> End() = 0;
  };

  virtual ~DenseWeights() = default;
  virtual size_t size() const = 0;
  // One loop per rank whose steps are every thread's batches (see above).
  virtual bool lockstep() const { return false; }
  // A view for one loop whose steps have up to `group` batches.
  virtual std::unique_ptr<Step> NewStep(int group) = 0;
};

// No dense weights (LR and FM without dense inputs).
std::unique_ptr<DenseWeights> NoDenseWeights();

// Sums a lockstep step's sparse gradients across the ranks of a job, whose
// batches of one step were all computed on the rows as the step found them
// (trainer/rank_merge.h).
class RankMerge {
 public:
  virtual ~RankMerge() = default;
  // Every rank calls it once a step, in step order, also with nothing to
  // give (out of data, or failed: then it drops the answer). Replaces *step
  // with the keys this rank pushes: those it owns, each summed over every
  // rank's *step. An error breaks the merge for good (a peer is gone).
  virtual absl::Status Merge(int row_dim, StepGradients* step) = 0;
};

// Hears of every trained batch, from any worker thread.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // `loss` is the batch's summed log loss; an error stops the loop.
  virtual absl::Status Trained(const Worker& w, double loss) = 0;
};

// Hands out training batches. Thread-safe.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Fills `batch`; false at the end (with `*error` set on failure).
  virtual bool Next(Batch* batch, absl::Status* error) = 0;
};

struct StepLoopOptions {
  // What a step trains: a CTR model, or word vectors (then `dense` holds no
  // weights: NoDenseWeights()). Exactly one is set.
  const CtrModel* model = nullptr;
  const WordModel* words = nullptr;
  BatchSource* source = nullptr;
  SparseStore* rows = nullptr;
  DenseWeights* dense = nullptr;
  StepObserver* observer = nullptr;  // may be null
  CheckpointGate* gate = nullptr;    // may be null
  int threads = 1;
  // Lockstep loops of a job with 2+ ranks: each step's pushes are summed
  // across the ranks (not owned; null: each rank pushes its own sums).
  RankMerge* ranks = nullptr;
  // SYNC: every push of a step is applied before its dense update ends, so
  // no rank pulls for the next step before this one's rows changed.
  bool flush_each_step = false;
  // The dense MLP's device for the lockstep loop's worker 0 (not owned).
  GpuMlp* gpu = nullptr;
  // When set (e.g. a lost coordinator), loops take no more batches.
  const std::atomic<bool>* stop = nullptr;
};

// Runs to the end of the source; returns the first error of any thread.
// Lockstep loops return how many dense steps they applied in `*steps`.
absl::Status RunStepLoop(const StepLoopOptions& options,
                         uint64_t* steps = nullptr);

// Forward only: fills w->probs for w->batch, pulling rows without creating
// them. `dense` may be null for models without dense weights.
absl::Status Predict(const CtrModel& model, SparseStore* rows,
                     const float* dense, Worker* w);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_STEP_LOOP_H_
