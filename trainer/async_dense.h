// Dense weights held on the pservers (model.mode ASYNC): the model's flat
// dense array cut into rows of the pservers' dense table (table 1,
// sparse_table/job_options.h) under keys FeatureSign(kDenseSlot,
// "dense/<i>"), pulled and pushed with each batch's sparse rows and updated
// there by model.dense_optimizer, the rule SYNC and HYBRID apply in the
// trainer. No trainer waits for another.
//
// Why offsets: a row starts at zero, not at a layer's Glorot
// initialisation, and the pservers have no call to load values. So the rows
// hold the offset from the model's own initialisation (CtrModel::InitDense,
// the same seed on every trainer): weights = init + rows. The gradient of an
// offset is the weight's, and Adam's and Adagrad's steps are the same for
// both (an L2 term pulls an offset toward the initialisation, not zero).
//
// Gradients go out as the per-example mean, as SYNC and HYBRID apply them.
// Pushes that queue while one is in flight are merged by summing
// (PsClient), as every async parameter server does: under Adam such a merge
// is one step for several batches, under SGD a step of their summed means.
// (Until 2026-12-01 the rows were table 0's, under its Adagrad with l2 0.1
// on the offsets: ASYNC ended 0.0023 AUC below SYNC on Criteo 137k.)
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
  // Lays `grads` (size() floats, summed over the batch) times `scale` out
  // as gradient rows (keys().size() rows); the last row's tail is zero.
  void GradRows(const float* grads, float scale, float* rows) const;

 private:
  int row_dim_;
  std::vector<float> init_;
  std::vector<uint64_t> keys_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_ASYNC_DENSE_H_
