#include "trainer/local_trainer.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "trainer/batch_keys.h"
#include "trainer/dense_sync.h"
#include "trainer/model/fm.h"
#include "trainer/model/model_io.h"
#include "trainer/model_export.h"

namespace sampan {
namespace {

// One worker's reusable buffers.
struct Worker : BatchKeys {
  Batch batch;
  std::vector<float> rows, grads, probs, dense, dense_grads;
  CtrModel::Workspace ws;
  PullPositions positions;  // this batch's rows, for its push

  void Dedup() { BatchKeys::Dedup(batch); }
  void DedupAndCount() { BatchKeys::DedupAndCount(batch); }
};

class LocalTrainer {
 public:
  LocalTrainer(const Dataset& train, const Dataset* test,
               const LocalTrainOptions& options)
      : train_(train), test_(test), options_(options), model_(options.model) {
    TableOptions table = options.table;
    table.embedding_dim = model_.row_dim() - 1;
    table_ = NewMemoryTable(table);
    std::vector<float> initial(model_.dense_size());
    model_.InitDense(initial.data());
    sync_ = NewLocalDenseSync();
    dense_ = std::make_unique<DenseParams>(std::move(initial), options.dense,
                                           sync_.get());
    BuildOrder();
  }

  absl::StatusOr<LocalTrainResult> Run() {
    start_ = absl::Now();
    std::vector<std::thread> threads;
    for (int t = 0; t < std::max(1, options_.threads); ++t) {
      threads.emplace_back([this] { Fail(WorkerLoop()); });
    }
    for (std::thread& t : threads) t.join();
    LocalTrainResult result;
    result.train_seconds = absl::ToDoubleSeconds(absl::Now() - start_);
    absl::MutexLock lock(&mu_);
    if (!error_.ok()) return error_;
    result.examples = examples_;
    result.examples_per_second = examples_ / result.train_seconds;
    result.train_loss = examples_ > 0 ? loss_sum_ / examples_ : 0;
    if (test_ != nullptr) {
      result.test = EvaluateTest();
      AddPointLocked(result.test);
    }
    result.curve = curve_;
    result.validation_auc = validation_auc_;
    if (!options_.export_dir.empty()) {
      if (absl::Status s = Export(); !s.ok()) return s;
    }
    return result;
  }

 private:
  void BuildOrder() {
    std::mt19937_64 rng(options_.seed);
    std::vector<uint32_t> epoch(train_.size());
    std::iota(epoch.begin(), epoch.end(), 0);
    for (int e = 0; e < options_.epochs; ++e) {
      if (options_.shuffle) std::shuffle(epoch.begin(), epoch.end(), rng);
      order_.insert(order_.end(), epoch.begin(), epoch.end());
    }
  }

  absl::Status WorkerLoop() {
    Worker w;
    w.dense.resize(model_.dense_size());
    const size_t b = options_.batch_size;
    while (!Failed()) {
      const size_t begin = next_.fetch_add(b);
      if (begin >= order_.size()) break;
      const size_t n = std::min(b, order_.size() - begin);
      train_.Gather(order_.data() + begin, n, &w.batch);
      if (absl::Status s = TrainBatch(&w); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status TrainBatch(Worker* w) {
    w->DedupAndCount();
    const size_t floats = w->keys.size() * model_.row_dim();
    w->rows.resize(floats);
    if (absl::Status s =
            table_->Pull(w->keys, true, w->rows.data(), &w->positions);
        !s.ok()) {
      return s;
    }
    w->grads.assign(floats, 0.0f);
    w->probs.resize(w->batch.size());
    if (!w->dense.empty()) dense_->Snapshot(w->dense.data());
    w->dense_grads.assign(w->dense.size(), 0.0f);
    const double loss = model_.Step(
        w->batch, w->row_of_sign, 0, w->rows.data(), w->dense.data(),
        w->grads.data(), w->dense_grads.data(), w->probs.data(), &w->ws);
    PushBatch push;
    push.keys = w->keys;
    push.grads = w->grads.data();
    push.shows = w->shows.data();
    push.clicks = w->clicks.data();
    push.positions = &w->positions;
    if (absl::StatusOr<PushResult> r = table_->Push(push); !r.ok()) {
      return r.status();
    }
    if (!w->dense.empty()) {
      absl::Status s =
          dense_->Apply(w->dense_grads.data(), 1.0f / w->batch.size());
      if (!s.ok()) return s;
    }
    return Account(w->batch.size(), loss);
  }

  // Counts a trained batch; scores the test set when a mark is crossed.
  absl::Status Account(size_t n, double loss) {
    bool evaluate = false, validate = false;
    {
      absl::MutexLock lock(&mu_);
      examples_ += n;
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
    if (validate) Validate();
    if (!evaluate) return absl::OkStatus();
    const EvalMetrics m = EvaluateTest();
    absl::MutexLock lock(&mu_);
    AddPointLocked(m);
    return absl::OkStatus();
  }

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
    last_examples_ = examples_;
    last_loss_ = loss_sum_;
    last_seconds_ = p.seconds;
    curve_.push_back(p);
  }

  // Scores the validation set after an epoch; stops training when its AUC
  // did not improve on the previous epoch's.
  void Validate() {
    const double auc = Score(*options_.validation).auc;
    absl::MutexLock lock(&mu_);
    const size_t epoch = validation_auc_.size();
    validation_auc_.back() = auc;
    const bool worse = epoch > 1 && auc <= validation_auc_[epoch - 2];
    SAMPAN_LOG(INFO) << absl::StrFormat(
        "epoch %d: validation AUC %.4f on %d rows%s", epoch, auc,
        options_.validation->size(), worse ? "; stopping early" : "");
    if (worse) next_.store(order_.size());
  }

  EvalMetrics EvaluateTest() { return Score(*test_); }

  EvalMetrics Score(const Dataset& data) {
    Worker w;
    w.dense.resize(model_.dense_size());
    if (!w.dense.empty()) dense_->Snapshot(w.dense.data());
    std::vector<float> probs, labels;
    std::vector<uint32_t> index(options_.batch_size);
    for (size_t begin = 0; begin < data.size(); begin += options_.batch_size) {
      const size_t n = std::min(options_.batch_size, data.size() - begin);
      std::iota(index.begin(), index.begin() + n, uint32_t(begin));
      data.Gather(index.data(), n, &w.batch);
      w.Dedup();
      w.rows.resize(w.keys.size() * model_.row_dim());
      if (absl::Status s = table_->Pull(w.keys, false, w.rows.data());
          !s.ok()) {
        Fail(s);
        break;
      }
      w.probs.resize(n);
      model_.Step(w.batch, w.row_of_sign, 0, w.rows.data(), w.dense.data(),
                  nullptr, nullptr, w.probs.data(), &w.ws);
      probs.insert(probs.end(), w.probs.begin(), w.probs.end());
      labels.insert(labels.end(), w.batch.labels.begin(), w.batch.labels.end());
    }
    return Evaluate(probs, labels);
  }

  // Every sign trained on (and the bias) as read without creating rows, so
  // that scoring the export equals EvaluateTest.
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

  void Fail(const absl::Status& s) {
    if (s.ok()) return;
    absl::MutexLock lock(&mu_);
    if (error_.ok()) error_ = s;
  }
  bool Failed() {
    absl::MutexLock lock(&mu_);
    return !error_.ok();
  }

  const Dataset& train_;
  const Dataset* const test_;
  const LocalTrainOptions options_;
  const CtrModel model_;
  std::unique_ptr<SparseTable> table_;
  std::unique_ptr<DenseSync> sync_;
  std::unique_ptr<DenseParams> dense_;
  std::vector<uint32_t> order_;  // every epoch's order, concatenated
  std::atomic<size_t> next_{0};  // first unclaimed position in order_
  absl::Time start_;

  absl::Mutex mu_;  // guards progress, the curve and the first error
  uint64_t examples_ ABSL_GUARDED_BY(mu_) = 0;
  double loss_sum_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t marks_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_examples_ ABSL_GUARDED_BY(mu_) = 0;
  double last_loss_ ABSL_GUARDED_BY(mu_) = 0;
  double last_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<CurvePoint> curve_ ABSL_GUARDED_BY(mu_);
  std::vector<double> validation_auc_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
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
