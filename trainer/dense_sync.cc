#include "trainer/dense_sync.h"

#include <algorithm>

namespace sampan {
namespace {

class LocalDenseSync : public DenseSync {
 public:
  absl::Status Reduce(float*, size_t) override { return absl::OkStatus(); }
};

}  // namespace

std::unique_ptr<DenseSync> NewLocalDenseSync() {
  return std::make_unique<LocalDenseSync>();
}

DenseParams::DenseParams(std::vector<float> initial,
                         const DenseOptimizerOptions& options, DenseSync* sync)
    : size_(initial.size()),
      sync_(sync),
      weights_(std::move(initial)),
      optimizer_(DenseOptimizer::Create(options, size_)) {}

void DenseParams::Snapshot(float* out) const {
  absl::MutexLock lock(&mu_);
  std::copy(weights_.begin(), weights_.end(), out);
}

absl::Status DenseParams::Apply(float* grads, float scale) {
  for (size_t i = 0; i < size_; ++i) grads[i] *= scale;
  absl::MutexLock lock(&mu_);
  // Under the lock so that every trainer reduces its steps in one order.
  if (sync_ != nullptr) {
    if (absl::Status s = sync_->Reduce(grads, size_); !s.ok()) return s;
  }
  optimizer_->Apply(weights_.data(), grads);
  return absl::OkStatus();
}

DenseModelState DenseParams::State() const {
  absl::MutexLock lock(&mu_);
  return {weights_, optimizer_->State()};
}

}  // namespace sampan
