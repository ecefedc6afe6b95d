// The three homes of a model's dense weights, as the step loop
// (trainer/step_loop.h) sees them:
//  - LocalDenseWeights: train-local's DenseParams in model.mode ASYNC; each
//    batch computes on a snapshot and applies its per-example mean gradient
//    (Hogwild).
//  - LocalLockstepDenseWeights: train-local's DenseParams in HYBRID and SYNC
//    (deep models' default): one loop whose steps are every thread's
//    batches, computed on one snapshot; their gradients are summed and one
//    optimizer step applies the mean over the step's examples (a
//    `sampan run` rank's step, with one rank).
//  - PserverDenseWeights: `sampan run` ASYNC, and LR/FM with dense inputs;
//    rows of the pservers' dense table (trainer/async_dense.h), pulled
//    before each batch and pushed (the per-example mean) after it.
//  - LockstepDenseWeights: HYBRID and SYNC; HybridDense's weights, identical
//    on every rank. A step's workers add their gradients into their own
//    buffers, summed (in worker order) before HybridDense averages the
//    ranks; a lone worker adds into HybridDense's buffer directly and its
//    blocks' allreduces overlap backward (unless `overlap` is false: SYNC).
#ifndef SAMPAN_TRAINER_DENSE_WEIGHTS_H_
#define SAMPAN_TRAINER_DENSE_WEIGHTS_H_

#include <memory>

#include "trainer/async_dense.h"
#include "trainer/client/ps_client.h"
#include "trainer/dense_sync.h"
#include "trainer/hybrid_dense.h"
#include "trainer/step_loop.h"

namespace sampan {

// Not owned; `params` outlives the result.
std::unique_ptr<DenseWeights> LocalDenseWeights(DenseParams* params);
std::unique_ptr<DenseWeights> LocalLockstepDenseWeights(DenseParams* params);

// `layout` maps the weights to rows of `client`'s table (row_dim floats).
std::unique_ptr<DenseWeights> PserverDenseWeights(const AsyncDense* layout,
                                                  PsClient* client,
                                                  int row_dim);

std::unique_ptr<DenseWeights> LockstepDenseWeights(HybridDense* dense,
                                                   bool overlap);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DENSE_WEIGHTS_H_
