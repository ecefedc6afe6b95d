// Optimizers for a model's dense weights (one flat float array).
//
// Promises: Apply(params, grads) performs exactly one update step of the
// rule on all n weights; the optimizer owns its state (accumulators, Adam
// moments and step count). Not thread-safe: the owner of the weights
// serialises Apply (see DenseParams in trainer/dense_params.h).
#ifndef SAMPAN_TRAINER_MODEL_DENSE_OPTIMIZER_H_
#define SAMPAN_TRAINER_MODEL_DENSE_OPTIMIZER_H_

#include <cstddef>
#include <memory>

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

class DenseOptimizer {
 public:
  static std::unique_ptr<DenseOptimizer> Create(
      const DenseOptimizerOptions& options, size_t n);
  virtual ~DenseOptimizer() = default;
  // params -= step(grads); `grads` is the gradient of the summed loss scaled
  // by the caller (usually 1 / batch size).
  virtual void Apply(float* params, const float* grads) = 0;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_DENSE_OPTIMIZER_H_
