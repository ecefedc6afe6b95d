// StepGradients: a lockstep step's sparse gradients summed per key, and
// GradientSum, the one way they are summed (a crew's batches in the step
// loop, the ranks' steps in trainer/rank_merge.h).
//
// Thread safety: none; one owner each.
#ifndef SAMPAN_TRAINER_STEP_GRADIENTS_H_
#define SAMPAN_TRAINER_STEP_GRADIENTS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "trainer/key_dedup.h"

namespace sampan {

// keys[i]'s gradient is grads[i * row_dim, (i + 1) * row_dim), its shows
// and clicks shows[i] and clicks[i].
struct StepGradients {
  std::vector<uint64_t> keys;
  std::vector<float> grads, shows, clicks;
};

// Sums gradient rows per key, keys in first-seen order; the sums are
// exactly what adding each key's rows in the order given yields.
class GradientSum {
 public:
  // Starts a sum of about `keys` distinct keys of `row_dim` floats each.
  void Reset(size_t keys, int row_dim) {
    row_dim_ = row_dim;
    dedup_.Reset(keys);
    sums_.grads.clear();
    sums_.shows.clear();
    sums_.clicks.clear();
  }

  void Add(uint64_t key, float show, float click, const float* grad) {
    const uint32_t row = dedup_.Index(key);
    if (row == sums_.shows.size()) {
      sums_.shows.push_back(0.0f);
      sums_.clicks.push_back(0.0f);
      sums_.grads.resize(sums_.grads.size() + row_dim_, 0.0f);
    }
    sums_.shows[row] += show;
    sums_.clicks[row] += click;
    float* sum = &sums_.grads[size_t(row) * row_dim_];
    for (int d = 0; d < row_dim_; ++d) sum[d] += grad[d];
  }

  // Moves the sums into *out; out's old vectors are kept for reuse.
  void Take(StepGradients* out) {
    dedup_.TakeKeys(&sums_.keys);
    std::swap(*out, sums_);
  }

 private:
  int row_dim_ = 0;
  KeyDedup dedup_;
  StepGradients sums_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_STEP_GRADIENTS_H_
