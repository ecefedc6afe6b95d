#include "trainer/model/fm.h"

#include <algorithm>
#include <cmath>

namespace sampan {

double FmModel::Step(const Batch& batch,
                     const std::vector<uint32_t>& row_of_sign,
                     uint32_t bias_row, const float* rows, float* grads,
                     float* probs) const {
  const uint32_t rd = row_dim();
  std::vector<float> sum(dim_);
  double loss = 0;
  for (size_t e = 0; e < batch.size(); ++e) {
    const uint32_t begin = batch.offsets[e], end = batch.offsets[e + 1];
    std::fill(sum.begin(), sum.end(), 0.0f);
    float logit = rows[size_t{bias_row} * rd];
    float square_sum = 0;
    for (uint32_t j = begin; j < end; ++j) {
      const float* row = rows + size_t{row_of_sign[j]} * rd;
      logit += row[0];
      for (uint32_t f = 0; f < dim_; ++f) {
        sum[f] += row[1 + f];
        square_sum += row[1 + f] * row[1 + f];
      }
    }
    float interaction = -square_sum;
    for (uint32_t f = 0; f < dim_; ++f) interaction += sum[f] * sum[f];
    logit += 0.5f * interaction;
    logit = std::clamp(logit, -30.0f, 30.0f);
    const float p = 1.0f / (1.0f + std::exp(-logit));
    probs[e] = p;
    const float y = batch.labels[e];
    loss -= y > 0.5f ? std::log(std::max(p, 1e-7f))
                     : std::log(std::max(1 - p, 1e-7f));
    if (grads == nullptr) continue;
    const float g = p - y;  // d loss / d logit
    grads[size_t{bias_row} * rd] += g;
    for (uint32_t j = begin; j < end; ++j) {
      const float* row = rows + size_t{row_of_sign[j]} * rd;
      float* grad = grads + size_t{row_of_sign[j]} * rd;
      grad[0] += g;
      for (uint32_t f = 0; f < dim_; ++f) {
        grad[1 + f] += g * (sum[f] - row[1 + f]);
      }
    }
  }
  return loss;
}

}  // namespace sampan
