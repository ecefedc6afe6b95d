#include "trainer/local_trainer.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <numeric>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "trainer/dataset_source.h"
#include "trainer/dense_sync.h"
#include "trainer/dense_weights.h"
#include "trainer/model/fm.h"
#include "trainer/model/model_io.h"
#include "trainer/model_export.h"
#include "trainer/step_loop.h"

namespace sampan {
namespace {

class LocalTrainer : public StepObserver {
 public:
  LocalTrainer(const Dataset& train, const Dataset* test,
               const LocalTrainOptions& options)
      : train_(train),
        test_(test),
        options_(options),
        model_(options.model),
        source_(train, options.batch_size, options.epochs, options.shuffle,
                options.seed) {
    TableOptions table = options.table;
    table.embedding_dim = model_.row_dim() - 1;
    table_ = NewMemoryTable(table);
    rows_ = TableRows(table_.get());
    std::vector<float> initial(model_.dense_size());
    model_.InitDense(initial.data());
    sync_ = NewLocalDenseSync();
    dense_ = std::make_unique<DenseParams>(std::move(initial), options.dense,
                                           sync_.get());
    if (model_.dense_size() == 0) {
      weights_ = NoDenseWeights();
    } else if (options.lockstep_dense) {
      weights_ = LocalLockstepDenseWeights(dense_.get());
    } else {
      weights_ = LocalDenseWeights(dense_.get());
    }
  }

  absl::StatusOr<LocalTrainResult> Run() {
    start_ = absl::Now();
    StepLoopOptions loop;
    loop.model = &model_;
    loop.source = &source_;
    loop.rows = rows_.get();
    loop.dense = weights_.get();
    loop.observer = this;
    loop.threads = std::max(1, options_.threads);
    absl::Status trained = RunStepLoop(loop);
    LocalTrainResult result;
    result.train_seconds = absl::ToDoubleSeconds(absl::Now() - start_);
    if (!trained.ok()) return trained;
    absl::MutexLock lock(&mu_);
    result.examples = examples_;
    result.examples_per_second = examples_ / result.train_seconds;
    result.train_loss = examples_ > 0 ? loss_sum_ / examples_ : 0;
    if (test_ != nullptr) {
      absl::StatusOr<EvalMetrics> m = Score(*test_);
      if (!m.ok()) return m.status();
      result.test = *m;
      AddPointLocked(result.test);
    }
    result.curve = curve_;
    result.validation_auc = validation_auc_;
    if (!options_.export_dir.empty()) {
      if (absl::Status s = Export(); !s.ok()) return s;
    }
    return result;
  }

  // Counts a trained batch; scores the test set when a mark is crossed and
  // the validation set when an epoch is.
  absl::Status Trained(const Worker& w, double loss) override {
    bool evaluate = false, validate = false;
    {
      absl::MutexLock lock(&mu_);
      examples_ += w.batch.size();
      loss_sum_ += loss;
      if (options_.validation != nullptr && train_.size() > 0 &&
          examples_ / train_.size() > validation_auc_.size()) {
        validation_auc_.push_back(0);  // claims this epoch's validation
        validate = true;
      }
      const uint64_t every = options_.eval_every;
      if (every > 0 && test_ != nullptr && examples_ / every > marks_) {
        marks_ = examples_ / every;
        evaluate = true;
      }
    }
    if (validate) {
      if (absl::Status s = Validate(); !s.ok()) return s;
    }
    if (!evaluate) return absl::OkStatus();
    absl::StatusOr<EvalMetrics> m = Score(*test_);
    if (!m.ok()) return m.status();
    absl::MutexLock lock(&mu_);
    AddPointLocked(*m);
    return absl::OkStatus();
  }

 private:
  void AddPointLocked(const EvalMetrics& m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    CurvePoint p;
    p.seconds = absl::ToDoubleSeconds(absl::Now() - start_);
    p.examples = examples_;
    const uint64_t dn = examples_ - last_examples_;
    p.train_loss = dn > 0 ? (loss_sum_ - last_loss_) / dn : 0;
    // A final point right after a mark trained nothing new: keep the rate.
    p.examples_per_second =
        dn == 0 && !curve_.empty()  ? curve_.back().examples_per_second
        : p.seconds > last_seconds_ ? dn / (p.seconds - last_seconds_)
                                    : 0;
    p.test = m;
    // A line per point, so a multi-epoch run shows its test AUC per epoch.
    if (m.rows > 0) {
      SAMPAN_LOG(INFO) << absl::StrFormat(
          "%d examples: test AUC %.4f logloss %.4f", p.examples, m.auc,
          m.logloss);
    }
    last_examples_ = examples_;
    last_loss_ = loss_sum_;
    last_seconds_ = p.seconds;
    curve_.push_back(p);
  }

  // Scores the validation set after an epoch; stops training when its AUC
  // did not improve on the previous epoch's.
  absl::Status Validate() {
    absl::StatusOr<EvalMetrics> m = Score(*options_.validation);
    if (!m.ok()) return m.status();
    absl::MutexLock lock(&mu_);
    const size_t epoch = validation_auc_.size();
    validation_auc_.back() = m->auc;
    const bool worse = epoch > 1 && m->auc <= validation_auc_[epoch - 2];
    SAMPAN_LOG(INFO) << absl::StrFormat(
        "epoch %d: validation AUC %.4f on %d rows%s", epoch, m->auc,
        options_.validation->size(), worse ? "; stopping early" : "");
    if (worse) source_.Stop();
    return absl::OkStatus();
  }

  absl::StatusOr<EvalMetrics> Score(const Dataset& data) {
    Worker w;
    std::vector<float> dense(model_.dense_size());
    if (!dense.empty()) dense_->Snapshot(dense.data());
    std::vector<float> probs, labels;
    std::vector<uint32_t> index(options_.batch_size);
    for (size_t begin = 0; begin < data.size(); begin += options_.batch_size) {
      const size_t n = std::min(options_.batch_size, data.size() - begin);
      std::iota(index.begin(), index.begin() + n, uint32_t(begin));
      data.Gather(index.data(), n, &w.batch);
      absl::Status s = Predict(model_, rows_.get(), dense.data(), &w);
      if (!s.ok()) return s;
      probs.insert(probs.end(), w.probs.begin(), w.probs.end());
      labels.insert(labels.end(), w.batch.labels.begin(), w.batch.labels.end());
    }
    return Evaluate(probs, labels);
  }

  // Every sign trained on (and the bias) as read without creating rows, so
  // that scoring the export equals the test score.
  absl::Status Export() {
    absl::flat_hash_set<uint64_t> seen(train_.signs.begin(),
                                       train_.signs.end());
    seen.insert(kBiasSign);
    const std::string& dir = options_.export_dir;
    absl::Status s = ExportSparsePart(
        dir, 0, std::vector<uint64_t>(seen.begin(), seen.end()),
        model_.row_dim(), [this](absl::Span<const uint64_t> keys, float* out) {
          return table_->Pull(keys, false, out);
        });
    if (!s.ok()) return s;
    return SaveDenseModel(DenseModelPath(dir), model_, dense_->State());
  }

  const Dataset& train_;
  const Dataset* const test_;
  const LocalTrainOptions options_;
  const CtrModel model_;
  DatasetSource source_;
  std::unique_ptr<SparseTable> table_;
  std::unique_ptr<SparseStore> rows_;
  std::unique_ptr<DenseSync> sync_;
  std::unique_ptr<DenseParams> dense_;
  std::unique_ptr<DenseWeights> weights_;
  absl::Time start_;

  absl::Mutex mu_;  // guards progress and the curve
  uint64_t examples_ ABSL_GUARDED_BY(mu_) = 0;
  double loss_sum_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t marks_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_examples_ ABSL_GUARDED_BY(mu_) = 0;
  double last_loss_ ABSL_GUARDED_BY(mu_) = 0;
  double last_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<CurvePoint> curve_ ABSL_GUARDED_BY(mu_);
  std::vector<double> validation_auc_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<LocalTrainResult> TrainLocal(const Dataset& train,
                                            const Dataset* test,
                                            const LocalTrainOptions& options) {
  if (options.batch_size == 0 || options.epochs < 1) {
    return absl::InvalidArgumentError("batch_size and epochs must be >= 1");
  }
  if (train.slots.size() != train.signs.size()) {
    return absl::InvalidArgumentError("training data carries no slots");
  }
  LocalTrainer trainer(train, test, options);
  return trainer.Run();
}

}  // namespace sampan
