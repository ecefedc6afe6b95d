#include "trainer/model/dense_optimizer.h"

#include <cmath>
#include <vector>

#include "Eigen/Core"

namespace sampan {
namespace {

using Arr = Eigen::Map<Eigen::ArrayXf>;
using ConstArr = Eigen::Map<const Eigen::ArrayXf>;

class Sgd : public DenseOptimizer {
 public:
  Sgd(const DenseOptimizerOptions& o, size_t n) : o_(o), n_(n) {}
  void Apply(float* params, const float* grads) override {
    Arr p(params, n_);
    p -= o_.learning_rate * (ConstArr(grads, n_) + o_.l2 * p);
  }

 private:
  DenseOptimizerOptions o_;
  size_t n_;
};

class Adagrad : public DenseOptimizer {
 public:
  Adagrad(const DenseOptimizerOptions& o, size_t n)
      : o_(o), acc_(Eigen::ArrayXf::Constant(n, o.initial_accumulator)) {}
  void Apply(float* params, const float* grads) override {
    Arr p(params, acc_.size());
    const Eigen::ArrayXf g = ConstArr(grads, acc_.size()) + o_.l2 * p;
    acc_ += g.square();
    p -= o_.learning_rate * g / acc_.sqrt();
  }

 private:
  DenseOptimizerOptions o_;
  Eigen::ArrayXf acc_;
};

class Adam : public DenseOptimizer {
 public:
  Adam(const DenseOptimizerOptions& o, size_t n)
      : o_(o), m_(Eigen::ArrayXf::Zero(n)), v_(Eigen::ArrayXf::Zero(n)) {}
  void Apply(float* params, const float* grads) override {
    Arr p(params, m_.size());
    const Eigen::ArrayXf g = ConstArr(grads, m_.size()) + o_.l2 * p;
    ++t_;
    m_ = o_.beta1 * m_ + (1 - o_.beta1) * g;
    v_ = o_.beta2 * v_ + (1 - o_.beta2) * g.square();
    // Bias corrections folded into the step size.
    const float lr = o_.learning_rate *
                     std::sqrt(1 - std::pow(o_.beta2, float(t_))) /
                     (1 - std::pow(o_.beta1, float(t_)));
    p -= lr * m_ / (v_.sqrt() + o_.epsilon);
  }

 private:
  DenseOptimizerOptions o_;
  Eigen::ArrayXf m_, v_;
  long t_ = 0;
};

}  // namespace

std::unique_ptr<DenseOptimizer> DenseOptimizer::Create(
    const DenseOptimizerOptions& options, size_t n) {
  switch (options.rule) {
    case DenseRule::kSgd:
      return std::make_unique<Sgd>(options, n);
    case DenseRule::kAdagrad:
      return std::make_unique<Adagrad>(options, n);
    case DenseRule::kAdam:
      return std::make_unique<Adam>(options, n);
  }
  return nullptr;
}

}  // namespace sampan
