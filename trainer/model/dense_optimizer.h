// Optimizers for a model's dense weights (one flat float array).
//
// Promises: Apply(params, grads) performs exactly one update step of the
// rule on all n weights; the optimizer owns its state (accumulators, Adam
// moments and step count). Not thread-safe: the owner of the weights
// serialises Apply (see DenseParams in trainer/dense_params.h).
#ifndef SAMPAN_TRAINER_MODEL_DENSE_OPTIMIZER_H_
#define SAMPAN_TRAINER_MODEL_DENSE_OPTIMIZER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"

namespace sampan {

enum class DenseRule { kSgd, kAdagrad, kAdam };

struct DenseOptimizerOptions {
  DenseRule rule = DenseRule::kAdam;
  float learning_rate = 1e-3f;
  // Adagrad's starting squared-gradient sum.
  float initial_accumulator = 1e-2f;
  // Adam's moment decay rates and denominator guard.
  float beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  // L2 penalty added to every gradient.
  float l2 = 0.0f;
};

// An optimizer's state, for saving a model mid-training (model_io.h).
struct DenseOptimizerState {
  DenseRule rule = DenseRule::kSgd;
  // Updates applied so far (Adam's bias correction depends on it).
  int64_t steps = 0;
  // Per-weight state, n floats each: none for SGD, the squared-gradient sums
  // for Adagrad, the first and second moments for Adam.
  std::vector<std::vector<float>> slots;
};

class DenseOptimizer {
 public:
  static std::unique_ptr<DenseOptimizer> Create(
      const DenseOptimizerOptions& options, size_t n);
  virtual ~DenseOptimizer() = default;
  // params -= step(grads); `grads` is the gradient of the summed loss scaled
  // by the caller (usually 1 / batch size).
  virtual void Apply(float* params, const float* grads) = 0;
  // A copy of the state, such that Restore(State()) changes nothing.
  virtual DenseOptimizerState State() const = 0;
  // Replaces the state; InvalidArgument (naming what differs) when `state`
  // is of another rule or another number of weights.
  virtual absl::Status Restore(const DenseOptimizerState& state) = 0;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_DENSE_OPTIMIZER_H_
