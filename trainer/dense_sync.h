// DenseParams and DenseSync: the dense weights of deep models inside one
// trainer process, and the seam through which trainers agree on them.
//
// DenseParams owns the weights and their optimizer. Workers take a snapshot
// before a step and hand back a gradient after it; both take the one mutex,
// so every step computes on a consistent copy (a snapshot may be a few steps
// stale, as in Hogwild, but never torn).
//
// DenseSync is how a step's gradient becomes the gradient applied:
//   local   (one trainer)  -- the identity, NewLocalDenseSync();
//   hybrid                 -- not through this seam: `sampan run` keeps the
//                             weights in trainer/hybrid_dense.h (one step
//                             loop per rank, allreduce of every step);
//   sync / async           -- `sampan run` model.mode SYNC (hybrid plus a
//                             push flush before every allreduce) and ASYNC
//                             (dense rows on the PS, trainer/async_dense.h).
#ifndef SAMPAN_TRAINER_DENSE_SYNC_H_
#define SAMPAN_TRAINER_DENSE_SYNC_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "trainer/model/dense_optimizer.h"
#include "trainer/model/model_io.h"

namespace sampan {

class DenseSync {
 public:
  virtual ~DenseSync() = default;
  // In place: turns this trainer's gradient (n floats) into the gradient
  // every trainer applies. Must be called by all trainers in the same order;
  // an implementation that waits does so with a timeout.
  virtual absl::Status Reduce(float* grads, size_t n) = 0;
};

// The single-trainer DenseSync: leaves gradients as they are.
std::unique_ptr<DenseSync> NewLocalDenseSync();

// Thread-safe: all methods may be called from many workers.
class DenseParams {
 public:
  // Takes the initial weights; `sync` may be null for local training.
  DenseParams(std::vector<float> initial, const DenseOptimizerOptions& options,
              DenseSync* sync);

  size_t size() const { return size_; }
  // Copies the current weights into `out` (size() floats).
  void Snapshot(float* out) const;
  // Scales `grads` by `scale`, reduces them through the DenseSync and
  // applies one optimizer step. `grads` is clobbered.
  absl::Status Apply(float* grads, float scale);
  // The weights with the optimizer's state, for model_io.h.
  DenseModelState State() const;

 private:
  const size_t size_;
  DenseSync* const sync_;
  mutable absl::Mutex mu_;
  std::vector<float> weights_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<DenseOptimizer> optimizer_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DENSE_SYNC_H_
