// Factorization machine (and logistic regression as its dim-0 case) over the
// rows pulled for a batch.
//
//   logit(x) = w_bias + sum_i w_i + 1/2 sum_f [(sum_i v_if)^2 - sum_i v_if^2]
//
// The model holds no parameters of its own: every weight, the bias included
// (as the row of kBiasSign), lives in the sparse table, so LR and FM need no
// dense synchronisation between trainers.
#ifndef SAMPAN_TRAINER_MODEL_FM_H_
#define SAMPAN_TRAINER_MODEL_FM_H_

#include <cstdint>
#include <vector>

#include "common/hash.h"
#include "trainer/data/batch.h"

namespace sampan {

// The sign of the global bias row: slot 0 is reserved for it.
inline const uint64_t kBiasSign = FeatureSign(0, "bias");

class FmModel {
 public:
  // dim == 0 gives logistic regression.
  explicit FmModel(uint32_t dim) : dim_(dim) {}

  uint32_t row_dim() const { return dim_ + 1; }

  // Forward (and, when `grads` is not null, backward) over `batch`.
  // `row_of_sign[j]` is the index in `rows` of the row for batch.signs[j];
  // `bias_row` that of kBiasSign. `rows` and `grads` hold row_dim() floats per
  // row; gradients of the log loss are summed per row into `grads`, which
  // the caller zeroes. Writes one probability per example into `probs`.
  // Returns the summed log loss.
  double Step(const Batch& batch, const std::vector<uint32_t>& row_of_sign,
              uint32_t bias_row, const float* rows, float* grads,
              float* probs) const;

 private:
  uint32_t dim_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_FM_H_
