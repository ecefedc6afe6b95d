#include "trainer/model/dense_optimizer.h"

#include <cmath>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

using Arr = Eigen::Map<Eigen::ArrayXf>;
using ConstArr = Eigen::Map<const Eigen::ArrayXf>;

const char* RuleName(DenseRule r) {
  switch (r) {
    case DenseRule::kSgd:
      return "sgd";
    case DenseRule::kAdagrad:
      return "adagrad";
    case DenseRule::kAdam:
      return "adam";
  }
  return "?";
}

std::vector<float> ToVector(const Eigen::ArrayXf& a) {
  return std::vector<float>(a.data(), a.data() + a.size());
}

// Checks that `state` fits an optimizer of rule `rule` with `slots` arrays
// of n floats each.
absl::Status CheckState(const DenseOptimizerState& state, DenseRule rule,
                        size_t slots, size_t n) {
  if (state.rule != rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("dense optimizer state is for ", RuleName(state.rule),
                     " but the optimizer is ", RuleName(rule)));
  }
  if (state.slots.size() != slots) {
    return absl::InvalidArgumentError(
        absl::StrCat(RuleName(rule), " state has ", state.slots.size(),
                     " slots, expected ", slots));
  }
  for (const std::vector<float>& s : state.slots) {
    if (s.size() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat(RuleName(rule), " state holds ", s.size(),
                       " weights, the model has ", n));
    }
  }
  return absl::OkStatus();
}

void Assign(const std::vector<float>& from, Eigen::ArrayXf* to) {
  *to = ConstArr(from.data(), from.size());
}

class Sgd : public DenseOptimizer {
 public:
  Sgd(const DenseOptimizerOptions& o, size_t n) : o_(o), n_(n) {}
  void Apply(float* params, const float* grads) override {
    Arr p(params, n_);
    p -= o_.learning_rate * (ConstArr(grads, n_) + o_.l2 * p);
    ++t_;
  }
  DenseOptimizerState State() const override {
    return {DenseRule::kSgd, t_, {}};
  }
  absl::Status Restore(const DenseOptimizerState& s) override {
    absl::Status st = CheckState(s, DenseRule::kSgd, 0, n_);
    if (st.ok()) t_ = s.steps;
    return st;
  }

 private:
  DenseOptimizerOptions o_;
  size_t n_;
  int64_t t_ = 0;
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
    ++t_;
  }
  DenseOptimizerState State() const override {
    return {DenseRule::kAdagrad, t_, {ToVector(acc_)}};
  }
  absl::Status Restore(const DenseOptimizerState& s) override {
    absl::Status st = CheckState(s, DenseRule::kAdagrad, 1, acc_.size());
    if (!st.ok()) return st;
    t_ = s.steps;
    Assign(s.slots[0], &acc_);
    return st;
  }

 private:
  DenseOptimizerOptions o_;
  Eigen::ArrayXf acc_;
  int64_t t_ = 0;
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
  DenseOptimizerState State() const override {
    return {DenseRule::kAdam, t_, {ToVector(m_), ToVector(v_)}};
  }
  absl::Status Restore(const DenseOptimizerState& s) override {
    absl::Status st = CheckState(s, DenseRule::kAdam, 2, m_.size());
    if (!st.ok()) return st;
    t_ = s.steps;
    Assign(s.slots[0], &m_);
    Assign(s.slots[1], &v_);
    return st;
  }

 private:
  DenseOptimizerOptions o_;
  Eigen::ArrayXf m_, v_;
  int64_t t_ = 0;
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
