#include "trainer/dense_weights.h"

#include <algorithm>
#include <vector>

namespace sampan {
namespace {

// A lockstep step's gradient: adds buffers [from, to) of `workers` into
// `sum`, in worker order (so every run sums alike).
void AddWorkers(const std::vector<std::vector<float>>& workers, int from,
                int to, float* sum) {
  for (int i = from; i < to; ++i) {
    const std::vector<float>& g = workers[i];
    for (size_t k = 0; k < g.size(); ++k) sum[k] += g[k];
  }
}

// A per-batch (Hogwild) step: reads the weights into its own copy before
// the batch and hands the batch's summed gradient on after it.
class PerBatchStep : public DenseWeights::Step {
 public:
  explicit PerBatchStep(size_t n) : weights_(n), grads_(n) {}
  absl::Status Begin(int batches, size_t examples) override {
    batches_ = batches;
    examples_ = examples;
    if (batches == 0) return absl::OkStatus();
    std::fill(grads_.begin(), grads_.end(), 0.0f);
    return Read(weights_.data());
  }
  const float* weights() override { return weights_.data(); }
  float* grads(int) override { return grads_.data(); }
  absl::StatusOr<bool> End() override {
    if (batches_ == 0) return false;
    absl::Status s = Update(grads_.data(), examples_);
    if (!s.ok()) return s;
    return true;
  }

 protected:
  // The current weights into `weights`.
  virtual absl::Status Read(float* weights) = 0;
  // Applies `grads`, summed over `examples` examples (clobbers them).
  virtual absl::Status Update(float* grads, size_t examples) = 0;

 private:
  std::vector<float> weights_, grads_;
  int batches_ = 0;
  size_t examples_ = 0;
};

class Local : public DenseWeights {
 public:
  explicit Local(DenseParams* params) : params_(params) {}

  class LocalStep : public PerBatchStep {
   public:
    explicit LocalStep(DenseParams* p) : PerBatchStep(p->size()), params_(p) {}

   protected:
    absl::Status Read(float* weights) override {
      params_->Snapshot(weights);
      return absl::OkStatus();
    }
    absl::Status Update(float* grads, size_t examples) override {
      return params_->Apply(grads, 1.0f / examples);
    }

   private:
    DenseParams* const params_;
  };

  size_t size() const override { return params_->size(); }
  std::unique_ptr<Step> NewStep(int) override {
    return std::make_unique<LocalStep>(params_);
  }

 private:
  DenseParams* const params_;
};

// train-local in HYBRID / SYNC: one loop whose steps are every thread's
// batches (as a `sampan run` rank's); their gradients are summed and
// applied as one step, the per-example mean over the step's examples.
class LocalLockstep : public DenseWeights {
 public:
  explicit LocalLockstep(DenseParams* params) : params_(params) {}

  class LocalLockstepStep : public Step {
   public:
    LocalLockstepStep(DenseParams* p, int group)
        : params_(p), weights_(p->size()), grads_(group) {}
    absl::Status Begin(int batches, size_t examples) override {
      batches_ = batches;
      examples_ = examples;
      if (batches == 0) return absl::OkStatus();
      params_->Snapshot(weights_.data());
      for (int i = 0; i < batches; ++i) {
        grads_[i].assign(params_->size(), 0.0f);
      }
      return absl::OkStatus();
    }
    const float* weights() override { return weights_.data(); }
    float* grads(int worker) override { return grads_[worker].data(); }
    absl::StatusOr<bool> End() override {
      if (batches_ == 0) return false;
      float* sum = grads_[0].data();  // workers 1.. added into worker 0's
      AddWorkers(grads_, 1, batches_, sum);
      absl::Status s = params_->Apply(sum, 1.0f / examples_);
      if (!s.ok()) return s;
      return true;
    }

   private:
    DenseParams* const params_;
    std::vector<float> weights_;
    std::vector<std::vector<float>> grads_;  // one per worker of the group
    int batches_ = 0;
    size_t examples_ = 0;
  };

  size_t size() const override { return params_->size(); }
  bool lockstep() const override { return true; }
  std::unique_ptr<Step> NewStep(int group) override {
    return std::make_unique<LocalLockstepStep>(params_, group);
  }

 private:
  DenseParams* const params_;
};

class Pserver : public DenseWeights {
 public:
  Pserver(const AsyncDense* layout, PsClient* client, int row_dim)
      : layout_(layout), client_(client), row_dim_(row_dim) {}

  class PserverStep : public PerBatchStep {
   public:
    explicit PserverStep(const Pserver& d)
        : PerBatchStep(d.layout_->size()),
          d_(d),
          rows_(d.layout_->keys().size() * d.row_dim_) {}

   protected:
    absl::Status Read(float* weights) override {
      absl::Status s = d_.client_->Pull(d_.layout_->keys(), true, rows_.data());
      if (s.ok()) d_.layout_->Weights(rows_.data(), weights);
      return s;
    }
    absl::Status Update(float* grads, size_t examples) override {
      // The per-example mean, as SYNC and HYBRID apply (async_dense.h).
      d_.layout_->GradRows(grads, 1.0f / examples, rows_.data());
      const size_t keys = d_.layout_->keys().size();
      counts_.assign(keys, float(examples));
      clicks_.assign(keys, 0.0f);
      return d_.client_->PushAsync(d_.layout_->keys(), rows_, counts_, clicks_);
    }

   private:
    const Pserver& d_;
    // The table's rows: pulled, then reused for their gradients.
    std::vector<float> rows_, counts_, clicks_;
  };

  size_t size() const override { return layout_->size(); }
  std::unique_ptr<Step> NewStep(int) override {
    return std::make_unique<PserverStep>(*this);
  }

 private:
  const AsyncDense* const layout_;
  PsClient* const client_;
  const int row_dim_;
};

class Lockstep : public DenseWeights {
 public:
  Lockstep(HybridDense* dense, bool overlap)
      : dense_(dense), overlap_(overlap) {}

  class LockstepStep : public Step {
   public:
    LockstepStep(HybridDense* dense, int group, size_t n, bool overlap)
        : dense_(dense),
          extra_(group - 1, std::vector<float>(n)),
          overlap_(overlap && group == 1) {}
    absl::Status Begin(int batches, size_t examples) override {
      batches_ = batches;
      dense_->BeginStep(batches > 0, examples);
      for (int i = 1; i < batches; ++i) {
        std::fill(extra_[i - 1].begin(), extra_[i - 1].end(), 0.0f);
      }
      return absl::OkStatus();
    }
    const float* weights() override { return dense_->weights(); }
    float* grads(int worker) override {
      return worker == 0 ? dense_->grads() : extra_[worker - 1].data();
    }
    const CtrModel::GradReadyFn* grad_ready() override {
      return overlap_ ? &dense_->grad_ready() : nullptr;
    }
    absl::StatusOr<bool> End() override {
      float* sum = dense_->grads();
      AddWorkers(extra_, 0, batches_ - 1, sum);
      return dense_->Step();
    }

   private:
    HybridDense* const dense_;
    std::vector<std::vector<float>> extra_;  // workers 1.. of the group
    const bool overlap_;
    int batches_ = 0;
  };

  size_t size() const override { return dense_->size(); }
  bool lockstep() const override { return true; }
  std::unique_ptr<Step> NewStep(int group) override {
    return std::make_unique<LockstepStep>(dense_, group, dense_->size(),
                                          overlap_);
  }

 private:
  HybridDense* const dense_;
  const bool overlap_;
};

}  // namespace

std::unique_ptr<DenseWeights> LocalDenseWeights(DenseParams* params) {
  return std::make_unique<Local>(params);
}

std::unique_ptr<DenseWeights> LocalLockstepDenseWeights(DenseParams* params) {
  return std::make_unique<LocalLockstep>(params);
}

std::unique_ptr<DenseWeights> PserverDenseWeights(const AsyncDense* layout,
                                                  PsClient* client,
                                                  int row_dim) {
  return std::make_unique<Pserver>(layout, client, row_dim);
}

std::unique_ptr<DenseWeights> LockstepDenseWeights(HybridDense* dense,
                                                   bool overlap) {
  return std::make_unique<Lockstep>(dense, overlap);
}

}  // namespace sampan
