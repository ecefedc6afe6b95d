#include "trainer/step_loop.h"

#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <string>

#include "common/hash.h"
#include "gtest/gtest.h"
#include "trainer/dense_weights.h"

namespace sampan {
namespace {

// `batches` batches of `rows` examples over two fields of 50 values, the
// click planted on field 1; each example carries one dense input.
class VectorSource : public BatchSource {
 public:
  VectorSource(int batches, int rows, uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (int b = 0; b < batches; ++b) {
      Batch batch;
      batch.Clear();
      batch.dense_dim = 1;
      for (int i = 0; i < rows; ++i) {
        const int a = rng() % 50, c = rng() % 50;
        batch.labels.push_back((rng() % 100) < (a < 25 ? 80 : 20) ? 1 : 0);
        batch.signs.push_back(FeatureSign(1, std::to_string(a)));
        batch.signs.push_back(FeatureSign(2, std::to_string(c)));
        batch.slots.push_back(1);
        batch.slots.push_back(2);
        batch.offsets.push_back(batch.signs.size());
        batch.dense.push_back(float(a % 3));
      }
      batches_.push_back(batch);
    }
  }
  bool Next(Batch* batch, absl::Status*) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_ == batches_.size()) return false;
    *batch = batches_[next_++];
    return true;
  }
  size_t taken() {
    std::lock_guard<std::mutex> lock(mu_);
    return next_;
  }

 private:
  std::mutex mu_;
  std::vector<Batch> batches_;
  size_t next_ = 0;
};

class Counter : public StepObserver {
 public:
  absl::Status Trained(const Worker& w, double loss) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++batches;
    examples += w.batch.size();
    losses.push_back(loss / w.batch.size());
    return batches == fail_at ? absl::InternalError("observer failed")
                              : absl::OkStatus();
  }
  std::mutex mu_;
  int batches = 0, fail_at = -1;
  size_t examples = 0;
  std::vector<double> losses;
};

// A lockstep DenseWeights that records what the loop asked of it and
// applies plain SGD to weights it keeps.
class RecordingLockstep : public DenseWeights {
 public:
  explicit RecordingLockstep(size_t n) : weights_(n, 0.0f) {}
  class RecStep : public Step {
   public:
    RecStep(RecordingLockstep* d, int group)
        : d_(d), grads_(group, std::vector<float>(d->weights_.size())) {}
    absl::Status Begin(int batches, size_t examples) override {
      d_->begins.push_back({batches, examples});
      batches_ = batches;
      examples_ = examples;
      for (auto& g : grads_) std::fill(g.begin(), g.end(), 0.0f);
      return absl::OkStatus();
    }
    const float* weights() override { return d_->weights_.data(); }
    float* grads(int i) override { return grads_[i].data(); }
    absl::StatusOr<bool> End() override {
      if (batches_ == 0) return false;
      std::vector<float> sum(d_->weights_.size());
      for (int i = 0; i < batches_; ++i) {
        for (size_t k = 0; k < sum.size(); ++k) sum[k] += grads_[i][k];
      }
      for (size_t k = 0; k < sum.size(); ++k) {
        d_->weights_[k] -= d_->lr * sum[k] / examples_;
      }
      d_->sums.push_back(sum);
      return true;
    }

   private:
    RecordingLockstep* d_;
    std::vector<std::vector<float>> grads_;
    int batches_ = 0;
    size_t examples_ = 0;
  };
  size_t size() const override { return weights_.size(); }
  bool lockstep() const override { return true; }
  std::unique_ptr<Step> NewStep(int group) override {
    return std::make_unique<RecStep>(this, group);
  }
  float lr = 0.1f;
  std::vector<std::pair<int, size_t>> begins;
  std::vector<std::vector<float>> sums;  // per step, over its workers
  std::vector<float> weights_;
};

CtrModelOptions Fm(bool dense_input) {
  CtrModelOptions m;
  m.kind = CtrKind::kFm;
  m.fields = 2;
  m.embedding_dim = 4;
  m.dense_inputs = dense_input ? 1 : 0;
  return m;
}

std::unique_ptr<SparseTable> Table(const CtrModel& model, float learning_rate,
                                   float init_range) {
  TableOptions t;
  t.embedding_dim = model.row_dim() - 1;
  t.num_shards = 4;
  t.learning_rate = learning_rate;
  t.init_range = init_range;
  return NewMemoryTable(t);
}

// An FM model, an in-process table for it, and loop options over both.
struct Rig {
  explicit Rig(bool dense_input, float learning_rate = 0.1f,
               float init_range = 0.01f)
      : model(Fm(dense_input)),
        table(Table(model, learning_rate, init_range)),
        rows(TableRows(table.get())) {}
  StepLoopOptions Options(BatchSource* source, DenseWeights* dense, int threads,
                          StepObserver* observer = nullptr) const {
    StepLoopOptions o;
    o.model = &model;
    o.source = source;
    o.rows = rows.get();
    o.dense = dense;
    o.observer = observer;
    o.threads = threads;
    return o;
  }
  const CtrModel model;
  const std::unique_ptr<SparseTable> table;
  const std::unique_ptr<SparseStore> rows;
};

TEST(StepLoopTest, HogwildTrainsEveryBatchOnceAndLearns) {
  Rig rig(false);
  auto dense = NoDenseWeights();
  VectorSource source(400, 64, 1);
  Counter counter;
  StepLoopOptions o = rig.Options(&source, dense.get(), 3, &counter);
  uint64_t steps = 7;
  ASSERT_TRUE(RunStepLoop(o, &steps).ok());
  EXPECT_EQ(counter.batches, 400);
  EXPECT_EQ(counter.examples, 400u * 64);
  EXPECT_EQ(steps, 0u);  // dense steps: none without lockstep weights
  // The pushes reached the table: the planted field's rows moved.
  double first = 0, last = 0;
  for (int i = 0; i < 50; ++i) first += counter.losses[i] / 50;
  for (int i = 350; i < 400; ++i) last += counter.losses[i] / 50;
  EXPECT_LT(last, first - 0.05) << first << " -> " << last;
  // Predict scores without creating rows: a new key reads as zeros.
  Worker w;
  VectorSource eval(1, 16, 2);
  absl::Status unused;
  ASSERT_TRUE(eval.Next(&w.batch, &unused));
  ASSERT_TRUE(Predict(rig.model, rig.rows.get(), nullptr, &w).ok());
  ASSERT_EQ(w.probs.size(), 16u);
  const TableStats before = rig.table->Stats();
  w.batch.signs[0] = FeatureSign(1, "never seen");
  ASSERT_TRUE(Predict(rig.model, rig.rows.get(), nullptr, &w).ok());
  EXPECT_EQ(rig.table->Stats().rows, before.rows);
}

TEST(StepLoopTest, LockstepStepsAreGroupsOfThreadsBatches) {
  Rig rig(true);
  ASSERT_EQ(rig.model.dense_size(), 2u);  // its weight and bias
  RecordingLockstep dense(rig.model.dense_size());
  VectorSource source(7, 32, 3);
  Counter counter;
  StepLoopOptions o = rig.Options(&source, &dense, 3, &counter);
  uint64_t steps = 0;
  ASSERT_TRUE(RunStepLoop(o, &steps).ok());
  EXPECT_EQ(counter.batches, 7);
  // 7 batches in groups of 3: 3, 3, 1, then a step out of data that ends it.
  ASSERT_EQ(dense.begins.size(), 4u);
  EXPECT_EQ(dense.begins[0], std::make_pair(3, size_t{96}));
  EXPECT_EQ(dense.begins[1], std::make_pair(3, size_t{96}));
  EXPECT_EQ(dense.begins[2], std::make_pair(1, size_t{32}));
  EXPECT_EQ(dense.begins[3], std::make_pair(0, size_t{0}));
  EXPECT_EQ(steps, 3u);
  // Every worker's dense gradient was applied: the dense input's weight
  // (the data's dense input carries signal) moved off zero.
  EXPECT_NE(dense.weights_[0], 0.0f);
}

TEST(StepLoopTest, AStepOfTwoWorkersSumsTheirGradients) {
  // Rows and weights that never move (learning rates 0), so a gradient
  // depends on its batch only: one step of two workers must carry the sum
  // of what two one-worker steps computed.
  std::vector<std::vector<float>> sums[2];
  for (int threads : {1, 2}) {
    Rig rig(true, /*learning_rate=*/0.0f, /*init_range=*/0.1f);
    RecordingLockstep dense(rig.model.dense_size());
    dense.weights_[0] = 0.3f;
    dense.lr = 0;
    VectorSource source(2, 16, 4);
    StepLoopOptions o = rig.Options(&source, &dense, threads);
    ASSERT_TRUE(RunStepLoop(o).ok());
    sums[threads - 1] = dense.sums;
  }
  ASSERT_EQ(sums[0].size(), 2u);
  ASSERT_EQ(sums[1].size(), 1u);
  ASSERT_NE(sums[0][0][0], 0.0f);
  EXPECT_FLOAT_EQ(sums[1][0][0], sums[0][0][0] + sums[0][1][0]);
}

TEST(StepLoopTest, ALockstepRankFailingAtTheGateStillEndsTheStep) {
  // A checkpoint due after 2 steps fails: the rank must still take part in
  // that step with no batch, so the other ranks see it out of data.
  Rig rig(true);
  RecordingLockstep dense(rig.model.dense_size());
  VectorSource source(10, 16, 7);
  CheckpointGate gate(2, 0, [](uint64_t, bool) -> absl::StatusOr<uint64_t> {
    return absl::UnavailableError("checkpoint failed");
  });
  StepLoopOptions o = rig.Options(&source, &dense, 2);
  o.gate = &gate;
  EXPECT_EQ(RunStepLoop(o).message(), "checkpoint failed");
  ASSERT_EQ(dense.begins.size(), 3u);
  EXPECT_EQ(dense.begins[2], std::make_pair(0, size_t{0}));
}

TEST(StepLoopTest, AnErrorStopsEveryThread) {
  Rig rig(false);
  auto dense = NoDenseWeights();
  VectorSource source(1000, 16, 5);
  Counter counter;
  counter.fail_at = 20;
  StepLoopOptions o = rig.Options(&source, dense.get(), 4, &counter);
  absl::Status s = RunStepLoop(o);
  EXPECT_EQ(s.message(), "observer failed");
  EXPECT_LT(source.taken(), 100u);
}

TEST(StepLoopTest, StopTakesNoMoreBatches) {
  Rig rig(false);
  auto dense = NoDenseWeights();
  VectorSource source(10, 16, 6);
  std::atomic<bool> stop{true};
  StepLoopOptions o = rig.Options(&source, dense.get(), 2);
  o.stop = &stop;
  EXPECT_TRUE(RunStepLoop(o).ok());
  EXPECT_EQ(source.taken(), 0u);
}

// FM's two dense weights (the dense input's and its bias) at zero under
// plain SGD with step size 1.
std::unique_ptr<DenseParams> SgdParams() {
  const CtrModel model(Fm(true));
  DenseOptimizerOptions sgd;
  sgd.rule = DenseRule::kSgd;
  sgd.learning_rate = 1.0f;
  return std::make_unique<DenseParams>(
      std::vector<float>(model.dense_size(), 0.0f), sgd, nullptr);
}

TEST(StepLoopTest, LocalDenseWeightsApplyTheMeanGradient) {
  std::unique_ptr<DenseParams> p = SgdParams();
  DenseParams& params = *p;
  auto weights = LocalDenseWeights(&params);
  auto step = weights->NewStep(1);
  ASSERT_TRUE(step->Begin(1, 4).ok());
  step->grads(0)[0] = 2.0f;  // summed over 4 examples
  ASSERT_TRUE(*step->End());
  std::vector<float> now(1);
  params.Snapshot(now.data());
  EXPECT_FLOAT_EQ(now[0], -0.5f);
  ASSERT_TRUE(step->Begin(0, 0).ok());
  EXPECT_FALSE(*step->End());
}

TEST(StepLoopTest, LocalLockstepDenseWeightsApplyOneStepOfTheMean) {
  std::unique_ptr<DenseParams> p = SgdParams();
  DenseParams& params = *p;
  auto weights = LocalLockstepDenseWeights(&params);
  ASSERT_TRUE(weights->lockstep());
  auto step = weights->NewStep(2);
  ASSERT_TRUE(step->Begin(2, 8).ok());
  step->grads(0)[0] = 2.0f;  // worker 0's batch, summed over its examples
  step->grads(1)[0] = 6.0f;  // worker 1's
  EXPECT_EQ(step->weights()[0], 0.0f);
  ASSERT_TRUE(*step->End());
  std::vector<float> now(params.size());
  params.Snapshot(now.data());
  EXPECT_FLOAT_EQ(now[0], -1.0f);  // one step of (2 + 6) / 8
  // The next step computes on the updated weights, its gradients zeroed.
  ASSERT_TRUE(step->Begin(1, 4).ok());
  EXPECT_FLOAT_EQ(step->weights()[0], -1.0f);
  EXPECT_EQ(step->grads(0)[0], 0.0f);
  ASSERT_TRUE(*step->End());
  params.Snapshot(now.data());
  EXPECT_FLOAT_EQ(now[0], -1.0f);
  ASSERT_TRUE(step->Begin(0, 0).ok());
  EXPECT_FALSE(*step->End());
}

// Records every push (keys, summed gradients, shows, clicks) on its way to
// an in-process table.
class RecordingRows : public SparseStore {
 public:
  explicit RecordingRows(SparseStore* rows, int row_dim)
      : rows_(rows), row_dim_(row_dim) {}
  struct Row {
    std::vector<float> grad;
    float show = 0, click = 0;
  };
  absl::Status Pull(absl::Span<const uint64_t> keys, bool training, float* rows,
                    PullPositions* positions) override {
    return rows_->Pull(keys, training, rows, positions);
  }
  absl::Status Push(const PushBatch& push) override {
    std::map<uint64_t, Row> p;
    for (size_t k = 0; k < push.keys.size(); ++k) {
      Row& r = p[push.keys[k]];
      r.grad.assign(push.grads + k * row_dim_, push.grads + (k + 1) * row_dim_);
      r.show = push.shows[k];
      r.click = push.clicks[k];
    }
    EXPECT_EQ(p.size(), push.keys.size()) << "a key pushed twice in one push";
    {
      std::lock_guard<std::mutex> lock(mu_);
      pushes.push_back(std::move(p));
    }
    return rows_->Push(push);
  }
  absl::Status Flush() override { return rows_->Flush(); }
  std::mutex mu_;
  std::vector<std::map<uint64_t, Row>> pushes;

 private:
  SparseStore* const rows_;
  const int row_dim_;
};

TEST(StepLoopTest, ALockstepStepPushesItsBatchesSummedOnce) {
  // Rows and weights that never move (learning rates 0): a batch's
  // gradients depend on the batch only. Two threads in lockstep must push
  // each key once a step, its gradient, shows and clicks the sums of what
  // one thread pushed for the step's two batches.
  std::vector<std::map<uint64_t, RecordingRows::Row>> pushes[2];
  for (int threads : {1, 2}) {
    Rig rig(true, /*learning_rate=*/0.0f, /*init_range=*/0.1f);
    RecordingLockstep dense(rig.model.dense_size());
    dense.weights_[0] = 0.3f;
    dense.lr = 0;
    RecordingRows rows(rig.rows.get(), rig.model.row_dim());
    VectorSource source(4, 16, 8);
    Counter counter;
    StepLoopOptions o = rig.Options(&source, &dense, threads, &counter);
    o.rows = &rows;
    ASSERT_TRUE(RunStepLoop(o).ok());
    EXPECT_EQ(counter.batches, 4);  // the observer hears of every batch
    pushes[threads - 1] = rows.pushes;
  }
  ASSERT_EQ(pushes[0].size(), 4u);
  // Each of the crew's two threads pushes the keys of its part of a step.
  ASSERT_EQ(pushes[1].size(), 4u);
  for (int step = 0; step < 2; ++step) {
    std::map<uint64_t, RecordingRows::Row> joined = pushes[1][2 * step];
    for (const auto& [key, r] : pushes[1][2 * step + 1]) {
      EXPECT_TRUE(joined.emplace(key, r).second)
          << "step " << step << ": key " << key << " pushed by both parts";
    }
    pushes[1][step] = joined;
  }
  for (int step = 0; step < 2; ++step) {
    std::map<uint64_t, RecordingRows::Row> want = pushes[0][2 * step];
    for (const auto& [key, r] : pushes[0][2 * step + 1]) {
      RecordingRows::Row& w = want[key];
      if (w.grad.empty()) w.grad.assign(r.grad.size(), 0.0f);
      for (size_t d = 0; d < r.grad.size(); ++d) w.grad[d] += r.grad[d];
      w.show += r.show;
      w.click += r.click;
    }
    const std::map<uint64_t, RecordingRows::Row>& got = pushes[1][step];
    ASSERT_EQ(got.size(), want.size()) << "step " << step;
    for (const auto& [key, w] : want) {
      auto it = got.find(key);
      ASSERT_NE(it, got.end()) << "step " << step << " lost key " << key;
      EXPECT_EQ(it->second.show, w.show);
      EXPECT_EQ(it->second.click, w.click);
      for (size_t d = 0; d < w.grad.size(); ++d) {
        EXPECT_NEAR(it->second.grad[d], w.grad[d], 1e-5f)
            << "step " << step << " key " << key << " float " << d;
      }
    }
  }
}

// A RankMerge standing in for the other ranks: it records what each step
// gave and hands back only the even keys, each with its gradient doubled.
class HalvingMerge : public RankMerge {
 public:
  absl::Status Merge(int row_dim, StepGradients* step) override {
    given.push_back(step->keys.size());
    StepGradients out;
    for (size_t k = 0; k < step->keys.size(); ++k) {
      if (step->keys[k] % 2 != 0) continue;
      out.keys.push_back(step->keys[k]);
      out.shows.push_back(step->shows[k]);
      out.clicks.push_back(step->clicks[k]);
      for (int d = 0; d < row_dim; ++d) {
        out.grads.push_back(2 * step->grads[k * row_dim + d]);
      }
    }
    *step = std::move(out);
    return absl::OkStatus();
  }
  std::vector<size_t> given;
};

TEST(StepLoopTest, EveryLockstepStepIsMergedAcrossRanksBeforeItsPush) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    // Rows and weights that never move: the same batches give the same
    // gradients, so the merged run must push what the plain run pushed,
    // as the merge changed it (even keys, gradients doubled).
    std::vector<std::map<uint64_t, RecordingRows::Row>> plain, merged;
    std::vector<size_t> given;
    uint64_t steps = 0;
    for (bool ranks : {false, true}) {
      Rig rig(true, /*learning_rate=*/0.0f, /*init_range=*/0.1f);
      RecordingLockstep dense(rig.model.dense_size());
      dense.lr = 0;
      RecordingRows rows(rig.rows.get(), rig.model.row_dim());
      VectorSource source(4, 16, 9);
      Counter counter;
      HalvingMerge merge;
      StepLoopOptions o = rig.Options(&source, &dense, threads, &counter);
      o.rows = &rows;
      if (ranks) o.ranks = &merge;
      ASSERT_TRUE(RunStepLoop(o, &steps).ok());
      EXPECT_EQ(counter.batches, 4);
      (ranks ? merged : plain) = rows.pushes;
      given = merge.given;
    }
    ASSERT_EQ(steps, 4u / threads);
    // Every step, then the step that found no data: a rank out of data
    // still merges (its peers may have had batches).
    ASSERT_EQ(given.size(), steps + 1);
    EXPECT_GT(given[0], 0u);
    EXPECT_EQ(given.back(), 0u);
    // Without ranks each crew thread pushes its part; with them the parts
    // are joined, merged and pushed once a step.
    ASSERT_EQ(plain.size(), steps * threads);
    ASSERT_EQ(merged.size(), steps);
    for (uint64_t step = 0; step < steps; ++step) {
      std::map<uint64_t, RecordingRows::Row> want;
      for (int p = 0; p < threads; ++p) {
        for (const auto& [key, r] : plain[step * threads + p]) {
          if (key % 2 != 0) continue;
          RecordingRows::Row w = r;
          for (float& g : w.grad) g *= 2;
          want[key] = w;
        }
      }
      const auto& got = merged[step];
      ASSERT_EQ(got.size(), want.size()) << "step " << step;
      for (const auto& [key, w] : want) {
        auto it = got.find(key);
        ASSERT_NE(it, got.end()) << "step " << step << " key " << key;
        EXPECT_EQ(it->second.show, w.show);
        for (size_t d = 0; d < w.grad.size(); ++d) {
          EXPECT_FLOAT_EQ(it->second.grad[d], w.grad[d]) << key;
        }
      }
    }
  }
}

// Fails the pull after `ok` good ones.
class FailingRows : public SparseStore {
 public:
  FailingRows(SparseStore* rows, int ok) : rows_(rows), ok_(ok) {}
  absl::Status Pull(absl::Span<const uint64_t> keys, bool training, float* rows,
                    PullPositions* positions) override {
    if (ok_-- <= 0) return absl::UnavailableError("pull failed");
    return rows_->Pull(keys, training, rows, positions);
  }
  absl::Status Push(const PushBatch& push) override {
    ++pushes;
    return rows_->Push(push);
  }
  absl::Status Flush() override { return rows_->Flush(); }
  int pushes = 0;

 private:
  SparseStore* const rows_;
  int ok_;
};

TEST(StepLoopTest, AFailedStepStillMergesButPushesNothing) {
  Rig rig(true);
  RecordingLockstep dense(rig.model.dense_size());
  FailingRows rows(rig.rows.get(), /*ok=*/2);
  VectorSource source(5, 16, 10);
  HalvingMerge merge;
  StepLoopOptions o = rig.Options(&source, &dense, 1);
  o.rows = &rows;
  o.ranks = &merge;
  const absl::Status s = RunStepLoop(o);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  // Two good steps, then the failed one, which gives nothing but still
  // takes part, so its peers are not left waiting.
  ASSERT_EQ(merge.given.size(), 3u);
  EXPECT_EQ(merge.given[2], 0u);
  EXPECT_EQ(rows.pushes, 2);
}

}  // namespace
}  // namespace sampan

namespace sampan {
namespace {

// Word vectors through the same loop: two Hogwild threads over an
// in-process table learn planted clusters (lines of one cluster's words).
TEST(StepLoopWordsTest, TwoThreadsLearnPlantedClusters) {
  constexpr int kClusters = 4, kWords = 6, kLines = 2000, kPerBatch = 20;
  std::mt19937_64 rng(5);
  const auto word = [](int c, int w) {
    return "c" + std::to_string(c) + "w" + std::to_string(w);
  };
  Vocabulary vocab;
  std::vector<Batch> batches;
  Batch b;
  b.Clear();
  for (int line = 0; line < kLines; ++line) {
    vocab.CountLine();
    const int c = int(rng() % kClusters);
    for (int k = 0; k < 8; ++k) {
      const std::string w = word(c, int(rng() % kWords));
      vocab.Count(w);
      b.signs.push_back(WordInputKey(w));
    }
    b.labels.push_back(0);
    b.offsets.push_back(uint32_t(b.signs.size()));
    if (b.size() == kPerBatch) {
      batches.push_back(b);
      b.Clear();
    }
  }
  vocab.Finish(1, 0);
  ASSERT_EQ(vocab.size(), size_t(kClusters * kWords));
  WordModelOptions o;
  o.dim = 8;
  o.window = 3;
  o.negatives = 4;
  o.learning_rate = 0.05f;
  o.planned_lines = 3 * kLines;
  const WordModel model(&vocab, o);
  TableOptions t;
  t.num_shards = 4;
  t.embedding_dim = 8;
  t.rule = OptimizerRule::kSgd;
  t.learning_rate = 0.05f;
  t.init_range = 0.1f;
  std::unique_ptr<SparseTable> table = NewMemoryTable(t);
  std::unique_ptr<SparseStore> rows = TableRows(table.get());
  std::unique_ptr<DenseWeights> dense = NoDenseWeights();
  class Epochs : public BatchSource {
   public:
    explicit Epochs(const std::vector<Batch>* b) : b_(b) {}
    bool Next(Batch* batch, absl::Status*) override {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ == 3 * b_->size()) return false;
      *batch = (*b_)[next_++ % b_->size()];
      return true;
    }

   private:
    const std::vector<Batch>* b_;
    std::mutex mu_;
    size_t next_ = 0;
  } source(&batches);
  Counter counter;
  StepLoopOptions loop;
  loop.words = &model;
  loop.source = &source;
  loop.rows = rows.get();
  loop.dense = dense.get();
  loop.observer = &counter;
  loop.threads = 2;
  ASSERT_TRUE(RunStepLoop(loop).ok());
  EXPECT_EQ(model.lines_done(), uint64_t(3 * kLines));
  EXPECT_EQ(counter.examples, size_t(3 * kLines));
  // Mean cosine of same-cluster pairs against pairs across clusters.
  std::vector<uint64_t> keys;
  for (int i = 0; i < int(vocab.size()); ++i)
    keys.push_back(vocab.input_key(i));
  std::vector<float> v(keys.size() * 9);
  ASSERT_TRUE(table->Pull(keys, false, v.data()).ok());
  const auto cosine = [&](int a, int c) {
    double ab = 0, aa = 0, cc = 0;
    for (int j = 1; j <= 8; ++j) {
      ab += v[a * 9 + j] * v[c * 9 + j];
      aa += v[a * 9 + j] * v[a * 9 + j];
      cc += v[c * 9 + j] * v[c * 9 + j];
    }
    return ab / std::sqrt(aa * cc);
  };
  double same = 0, other = 0;
  int n_same = 0, n_other = 0;
  for (int a = 0; a < int(vocab.size()); ++a) {
    for (int c = a + 1; c < int(vocab.size()); ++c) {
      const bool together = vocab.word(a)[1] == vocab.word(c)[1];
      (together ? same : other) += cosine(a, c);
      ++(together ? n_same : n_other);
    }
  }
  same /= n_same;
  other /= n_other;
  EXPECT_GT(same, other + 0.5)
      << "same-cluster " << same << ", others " << other;
}

}  // namespace
}  // namespace sampan
