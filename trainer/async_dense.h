// Dense weights held on the pservers (model.mode ASYNC): the model's flat
// dense array cut into rows of the sparse table under reserved keys
// (FeatureSign(kDenseSlot, "dense/<i>")), pulled and pushed with each
// batch's sparse rows and updated there by the table's optimizer, as any
// row is. No trainer waits for another.
//
// Why offsets: a row starts as the table's initial value (w = 0, v small
// uniform), not as a layer's Glorot initialisation, and the pservers have
// no call to load values. So the rows hold the offset from the model's own
// initialisation (CtrModel::InitDense, the same seed on every trainer):
// weights = init + rows. The gradient of an offset is the weight's.
//
// Gradients are pushed summed over the batch, as every sparse row's is, not
// as the per-example mean the hybrid step applies: the table's Adagrad is
// invariant to a gradient's scale but for its L2 term and its initial
// accumulator, and under a mean both acted batch-size times stronger on rows
// every example updates (l2 0.1 pulled the offsets back to the
// initialisation: ASYNC ended 0.0023 AUC below SYNC on Criteo 137k; summed,
// it matches SYNC, bench/RESULTS.md).
//
// Caveats: the rows live under the table's policies -- admission
// (admit_after_pushes) and embedx_threshold delay them like any key, and
// Shrink may age them out of a table that stops training.
//
// Thread safety: immutable after construction.
#ifndef SAMPAN_TRAINER_ASYNC_DENSE_H_
#define SAMPAN_TRAINER_ASYNC_DENSE_H_

#include <cstdint>
#include <vector>

#include "trainer/model/ctr_model.h"

namespace sampan {

// The slot of the dense rows' keys; data slots are far below it.
inline constexpr uint32_t kDenseSlot = 0xFFFF;

class AsyncDense {
 public:
  // `row_dim`: floats per table row (CtrModel::row_dim()).
  AsyncDense(const CtrModel& model, int row_dim);

  size_t size() const { return init_.size(); }
  // The reserved keys, one per row of the dense array.
  const std::vector<uint64_t>& keys() const { return keys_; }
  // weights (size() floats) = init + the pulled rows (keys().size() rows).
  void Weights(const float* rows, float* weights) const;
  // Lays `grads` (size() floats, summed over the batch) out as gradient
  // rows (keys().size() rows).
  void GradRows(const float* grads, float* rows) const;

 private:
  int row_dim_;
  std::vector<float> init_;
  std::vector<uint64_t> keys_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_ASYNC_DENSE_H_
