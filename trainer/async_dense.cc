#include "trainer/async_dense.h"

#include <algorithm>
#include <string>

#include "common/hash.h"

namespace sampan {

AsyncDense::AsyncDense(const CtrModel& model, int row_dim)
    : row_dim_(row_dim), init_(model.dense_size()) {
  model.InitDense(init_.data());
  const size_t rows = (init_.size() + row_dim - 1) / row_dim;
  for (size_t i = 0; i < rows; ++i) {
    keys_.push_back(FeatureSign(kDenseSlot, "dense/" + std::to_string(i)));
  }
}

void AsyncDense::Weights(const float* rows, float* weights) const {
  for (size_t i = 0; i < init_.size(); ++i) weights[i] = init_[i] + rows[i];
}

void AsyncDense::GradRows(const float* grads, float scale, float* rows) const {
  for (size_t i = 0; i < init_.size(); ++i) rows[i] = scale * grads[i];
  // The tail of the last row is no weight.
  std::fill(rows + init_.size(), rows + keys_.size() * row_dim_, 0.0f);
}

}  // namespace sampan
