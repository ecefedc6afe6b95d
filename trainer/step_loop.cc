#include "trainer/step_loop.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "common/hash.h"
#include "trainer/client/ps_client.h"

namespace sampan {
namespace {

class TableStore : public SparseStore {
 public:
  explicit TableStore(SparseTable* table) : table_(table) {}
  absl::Status Pull(absl::Span<const uint64_t> keys, bool training, float* rows,
                    PullPositions* positions) override {
    if (positions == nullptr) return table_->Pull(keys, training, rows);
    return table_->Pull(keys, training, rows, positions);
  }
  absl::Status Push(const PushBatch& push) override {
    return table_->Push(push).status();
  }
  absl::Status Flush() override { return absl::OkStatus(); }

 private:
  SparseTable* const table_;
};

class FleetStore : public SparseStore {
 public:
  FleetStore(PsClient* client, int row_dim)
      : client_(client), row_dim_(row_dim) {}
  absl::Status Pull(absl::Span<const uint64_t> keys, bool training, float* rows,
                    PullPositions*) override {
    return client_->Pull(keys, training, rows);
  }
  absl::Status Push(const PushBatch& push) override {
    const size_t n = push.keys.size();
    return client_->PushAsync(push.keys,
                              absl::MakeConstSpan(push.grads, n * row_dim_),
                              absl::MakeConstSpan(push.shows, n),
                              absl::MakeConstSpan(push.clicks, n));
  }
  absl::Status Flush() override { return client_->Flush(); }

 private:
  PsClient* const client_;
  const int row_dim_;
};

class NoDense : public DenseWeights {
 public:
  class NoStep : public Step {
   public:
    absl::Status Begin(int batches, size_t) override {
      batches_ = batches;
      return absl::OkStatus();
    }
    const float* weights() override { return nullptr; }
    float* grads(int) override { return nullptr; }
    absl::StatusOr<bool> End() override { return batches_ > 0; }

   private:
    int batches_ = 0;
  };
  size_t size() const override { return 0; }
  std::unique_ptr<Step> NewStep(int) override {
    return std::make_unique<NoStep>();
  }
};

// Runs fn(0..n) with fn(0) on the caller and the rest on helper threads,
// returning when every call returned. One caller at a time.
class Crew {
 public:
  explicit Crew(int helpers) {
    for (int k = 1; k <= helpers; ++k) {
      threads_.emplace_back([this, k] { Serve(k); });
    }
  }
  ~Crew() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      exit_ = true;
    }
    start_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void Run(int n, const std::function<void(int)>& fn) {
    if (n <= 0) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      n_ = n;
      pending_ = n - 1;
      ++generation_;
    }
    if (n > 1) start_.notify_all();
    fn(0);
    std::unique_lock<std::mutex> lock(mu_);
    // Each call is bounded by its own RPC deadlines, so this wait is too.
    done_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  void Serve(int k) {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      start_.wait(lock, [&] { return exit_ || generation_ != seen; });
      if (exit_) return;
      seen = generation_;
      if (k >= n_) continue;
      const std::function<void(int)>* fn = fn_;
      lock.unlock();
      (*fn)(k);
      lock.lock();
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex mu_;  // guards everything below but threads_
  std::condition_variable start_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  int n_ = 0;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool exit_ = false;
  std::vector<std::thread> threads_;
};

// One loop: its workers (a crew of `group` in lockstep, else one) and its
// view of the dense weights.
class Loop {
 public:
  Loop(const StepLoopOptions& o, int group, std::atomic<bool>* failed)
      : o_(o),
        group_(group),
        failed_(failed),
        merge_(o.dense->lockstep() && o.words == nullptr &&
               (group > 1 || o.ranks != nullptr)),
        workers_(group),
        parts_(merge_ ? group : 0),
        step_(o.dense->NewStep(group)) {
    if (o.dense->lockstep()) workers_[0].ws.gpu = o.gpu;
  }

  absl::Status Run(uint64_t* steps) {
    Crew crew(group_ - 1);
    std::vector<absl::Status> results(group_);
    const std::function<void(int)> train = [&](int i) {
      results[i] = Train(i);
    };
    absl::Status read_status;
    const bool lockstep = o_.dense->lockstep();
    while (true) {
      absl::Status st = o_.gate != nullptr ? o_.gate->Enter() : absl::Status();
      int n = 0;
      size_t examples = 0;
      while (st.ok() && n < group_ && !Stopped() &&
             o_.source->Next(&workers_[n].batch, &read_status)) {
        examples += workers_[n].batch.size();
        ++n;
      }
      if (n > 0 && o_.gate != nullptr) o_.gate->Took();
      bool more = n > 0;
      // In lockstep a rank that failed (even at the gate: then with no
      // batch) still takes part in the step, so that the others see it out
      // of data and stop at once rather than time out.
      if (lockstep || (st.ok() && n > 0)) {
        const absl::Status begun = step_->Begin(n, examples);
        if (begun.ok() && st.ok()) {
          crew.Run(n, train);
          for (int i = 0; i < n && st.ok(); ++i) st = results[i];
        }
        if (begun.ok() && merge_) {
          // Across ranks every rank merges every step, even out of data or
          // failed, so that no peer waits for it. (A lockstep Begin that
          // failed would leave its peers waiting in the dense allreduce as
          // well; HybridDense's Begin cannot fail.)
          const absl::Status m = PushMerged(&crew, st.ok() ? n : 0, st.ok());
          if (st.ok()) st = m;
        }
        // SYNC: this step's pushes are applied before its End (a rank out
        // of data may still push keys it owns from its peers' batches).
        if (begun.ok() && st.ok() && o_.flush_each_step &&
            (n > 0 || o_.ranks != nullptr)) {
          st = o_.rows->Flush();
        }
        if (!begun.ok()) {
          if (st.ok()) st = begun;
        } else {
          absl::StatusOr<bool> end = step_->End();
          if (!end.ok()) {
            if (st.ok()) st = end.status();
          } else {
            more = *end;
            if (*end && lockstep) ++*steps;
          }
        }
      }
      if (o_.gate != nullptr) o_.gate->Leave();
      if (!st.ok()) {
        failed_->store(true);
        return st;
      }
      if (!more) break;
    }
    return read_status;
  }

 private:
  bool Stopped() const {
    return failed_->load() || (o_.stop != nullptr && o_.stop->load());
  }

  absl::Status Train(int i) {
    Worker& w = workers_[i];
    if (o_.words != nullptr) {
      o_.words->Plan(w.batch, &w.words, &w.keys, &w.shows);
      w.clicks.assign(w.keys.size(), 0.0f);
    } else {
      w.DedupAndCount(w.batch);
    }
    const int row_dim =
        o_.words != nullptr ? o_.words->row_dim() : o_.model->row_dim();
    const size_t floats = w.keys.size() * row_dim;
    w.rows.resize(floats);
    // Positions speed up this batch's own push; a merged push has none.
    absl::Status s = w.keys.empty()
                         ? absl::OkStatus()
                         : o_.rows->Pull(w.keys, true, w.rows.data(),
                                         merge_ ? nullptr : &w.positions);
    if (!s.ok()) return s;
    w.grads.resize(floats);
    double loss = 0;
    if (o_.words != nullptr) {
      loss = o_.words->Train(&w.words, w.rows.data(), w.grads.data());
      w.probs.clear();
    } else {
      std::fill(w.grads.begin(), w.grads.end(), 0.0f);
      w.probs.resize(w.batch.size());
      const CtrModel::GradReadyFn* hook =
          i == 0 ? step_->grad_ready() : nullptr;
      loss = o_.model->Step(w.batch, w.row_of_sign, 0, w.rows.data(),
                            step_->weights(), w.grads.data(), step_->grads(i),
                            w.probs.data(), &w.ws,
                            hook != nullptr ? *hook : CtrModel::GradReadyFn());
    }
    w.loss = loss;
    if (merge_) return absl::OkStatus();  // PushMerged pushes and reports
    if (w.keys.empty()) {
      return o_.observer != nullptr ? o_.observer->Trained(w, loss)
                                    : absl::OkStatus();
    }
    PushBatch push;
    push.keys = w.keys;
    push.grads = w.grads.data();
    push.shows = w.shows.data();
    push.clicks = w.clicks.data();
    push.positions = &w.positions;
    if (s = o_.rows->Push(push); !s.ok()) return s;
    return o_.observer != nullptr ? o_.observer->Trained(w, loss)
                                  : absl::OkStatus();
  }

  // A lockstep step's batches were all computed on the rows as they were
  // when the step began: their gradients are summed per key (and across
  // ranks by o_.ranks) and pushed once, so the step updates each row as one
  // batch of all their examples would (two pushes of gradients computed on
  // the same rows would each take a full Adagrad step: bench/RESULTS.md,
  // 2026-12-03). The crew sums in parallel, each thread the keys of its own
  // part (PartOf), and without ranks pushes its part itself. Then the
  // observer hears of each batch. `push` false: a failed step only takes
  // its part in the ranks' merge.
  absl::Status PushMerged(Crew* crew, int n, bool push) {
    const int parts = group_;
    std::vector<absl::Status> results(parts);
    crew->Run(parts, [&](int p) {
      SumPart(p, n);
      if (o_.ranks == nullptr && push) results[p] = PushPart(parts_[p].step);
    });
    for (const absl::Status& s : results) {
      if (!s.ok()) return s;
    }
    if (o_.ranks != nullptr) {
      // The parts hold disjoint keys: joined, they are the rank's step.
      StepGradients& g = parts_[0].step;
      for (int p = 1; p < parts; ++p) {
        const StepGradients& more = parts_[p].step;
        g.keys.insert(g.keys.end(), more.keys.begin(), more.keys.end());
        g.grads.insert(g.grads.end(), more.grads.begin(), more.grads.end());
        g.shows.insert(g.shows.end(), more.shows.begin(), more.shows.end());
        g.clicks.insert(g.clicks.end(), more.clicks.begin(), more.clicks.end());
      }
      const int row_dim = o_.model->row_dim();
      if (absl::Status s = o_.ranks->Merge(row_dim, &g); !s.ok()) return s;
      if (push) {
        if (absl::Status s = PushPart(g); !s.ok()) return s;
      }
    }
    if (!push || o_.observer == nullptr) return absl::OkStatus();
    for (int i = 0; i < n; ++i) {
      absl::Status s = o_.observer->Trained(workers_[i], workers_[i].loss);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Which of `parts` threads sums `key` (high bits: KeyDedup probes with
  // the low ones).
  static int PartOf(uint64_t key, int parts) {
    return static_cast<int>((Mix64(key) >> 32) % static_cast<uint64_t>(parts));
  }

  // Sums the step's first n batches' gradients, shows and clicks per key,
  // for the keys of part p, into parts_[p].step.
  void SumPart(int p, int n) {
    const int parts = group_;
    const int row_dim = o_.model->row_dim();
    Part& part = parts_[p];
    part.sum.Reset(n > 0 ? workers_[0].keys.size() * n / parts + 16 : 0,
                   row_dim);
    for (int i = 0; i < n; ++i) {
      const Worker& w = workers_[i];
      for (size_t k = 0; k < w.keys.size(); ++k) {
        if (parts > 1 && PartOf(w.keys[k], parts) != p) continue;
        part.sum.Add(w.keys[k], w.shows[k], w.clicks[k],
                     &w.grads[k * size_t(row_dim)]);
      }
    }
    part.sum.Take(&part.step);
  }

  absl::Status PushPart(const StepGradients& g) {
    if (g.keys.empty()) return absl::OkStatus();
    PushBatch batch;
    batch.keys = g.keys;
    batch.grads = g.grads.data();
    batch.shows = g.shows.data();
    batch.clicks = g.clicks.data();
    return o_.rows->Push(batch);
  }

  const StepLoopOptions& o_;
  const int group_;
  std::atomic<bool>* const failed_;
  const bool merge_;  // lockstep crews of 2+ or ranks: one push a step
  std::vector<Worker> workers_;
  // A merging step's sums, one part per crew thread (disjoint keys).
  struct Part {
    GradientSum sum;
    StepGradients step;
  };
  std::vector<Part> parts_;
  const std::unique_ptr<DenseWeights::Step> step_;
};

}  // namespace

std::unique_ptr<SparseStore> TableRows(SparseTable* table) {
  return std::make_unique<TableStore>(table);
}

std::unique_ptr<SparseStore> FleetRows(PsClient* client, int row_dim) {
  return std::make_unique<FleetStore>(client, row_dim);
}

std::unique_ptr<DenseWeights> NoDenseWeights() {
  return std::make_unique<NoDense>();
}

absl::Status RunStepLoop(const StepLoopOptions& options, uint64_t* steps) {
  const int threads = std::max(1, options.threads);
  const bool lockstep = options.dense->lockstep();
  std::atomic<bool> failed{false};
  uint64_t applied = 0;
  if (lockstep) {
    Loop loop(options, threads, &failed);
    absl::Status s = loop.Run(&applied);
    if (steps != nullptr) *steps = applied;
    return s;
  }
  std::vector<absl::Status> results(threads);
  std::vector<std::thread> loops;
  for (int t = 0; t < threads; ++t) {
    loops.emplace_back([&, t] {
      Loop loop(options, 1, &failed);
      uint64_t unused = 0;
      results[t] = loop.Run(&unused);
    });
  }
  for (std::thread& t : loops) t.join();
  if (steps != nullptr) *steps = 0;
  for (const absl::Status& s : results) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Predict(const CtrModel& model, SparseStore* rows,
                     const float* dense, Worker* w) {
  w->Dedup(w->batch);
  w->rows.resize(w->keys.size() * model.row_dim());
  absl::Status s = rows->Pull(w->keys, false, w->rows.data(), nullptr);
  if (!s.ok()) return s;
  w->probs.resize(w->batch.size());
  model.Step(w->batch, w->row_of_sign, 0, w->rows.data(), dense, nullptr,
             nullptr, w->probs.data(), &w->ws);
  return absl::OkStatus();
}

}  // namespace sampan
