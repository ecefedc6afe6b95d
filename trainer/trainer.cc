#include "trainer/trainer.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/security.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/client.h"
#include "sparse_table/job_options.h"
#include "trainer/async_dense.h"
#include "trainer/batch_keys.h"
#include "trainer/checkpoint_gate.h"
#include "trainer/client/ps_client.h"
#include "trainer/data/criteo_reader.h"
#include "trainer/eval/auc.h"
#include "trainer/hybrid_dense.h"
#include "trainer/input_queue.h"
#include "trainer/local_job.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/fm.h"
#include "trainer/model/gpu_mlp.h"
#include "trainer/model/model_io.h"
#include "trainer/model_export.h"
#include "trainer/part_export.h"

namespace sampan {
namespace {

absl::Duration Seconds(double s) { return absl::Seconds(s); }

// " (+N rows of its shuffle window)" when the position is inside one.
std::string WindowNote(const coord::DataPosition& p) {
  if (p.window_skip() == 0) return "";
  return absl::StrCat(" (+", p.window_skip(), " rows of its shuffle window)");
}

// A worker's reusable buffers: one batch, its keys, and their rows.
struct Scratch : BatchKeys {
  Batch batch;
  std::vector<float> rows, grads, probs;

  void Dedup() { BatchKeys::Dedup(batch); }
  void CountShowsAndClicks() { BatchKeys::CountShowsAndClicks(batch); }
};

class Trainer {
 public:
  // `start`: the checkpointed position to resume from (null: the start).
  Trainer(const JobConfig& config, int rank, const std::string& coordinator,
          std::shared_ptr<grpc::ChannelCredentials> credentials,
          const coord::DataPosition* start, std::string dense_path,
          uint64_t generation)
      : config_(config),
        dense_path_(std::move(dense_path)),
        generation_(generation),
        rank_(rank),
        credentials_(credentials),
        coordinator_(
            coordinator, Seconds(config.cluster().rpc_deadline_seconds()),
            Seconds(config.cluster().wait_timeout_seconds()), credentials),
        model_(config.model().type() == LR ? 0
                                           : config.model().embedding_dim()),
        input_(config, rank, start),
        deep_(config.model().type() != LR && config.model().type() != FM),
        sync_(config.model().mode() == ModelConfig::SYNC),
        checkpoints_(config.checkpoint().every_steps() > 0 ||
                     config.checkpoint().every_seconds() > 0),
        gate_(config.checkpoint().every_steps(), start ? start->steps() : 0,
              [this](uint64_t epoch, bool missed) {
                return TakeCheckpoint(epoch, missed);
              }) {
    if (start != nullptr) examples_ = start->rows();
  }

  absl::Status Run() {
    if (config_.data().format() != CRITEO_TSV) {
      return absl::UnimplementedError(
          "`sampan run` reads CRITEO_TSV; use `sampan train-local` for "
          "other formats");
    }
    if (config_.data().integer_features() >= DataConfig::LOG_DENSE) {
      return absl::UnimplementedError(
          "`sampan run` feeds integer fields as BUCKETS only; "
          "data.integer_features LOG_DENSE needs `sampan train-local`");
    }
    if (absl::Status s = Connect(); !s.ok()) return s;
    std::thread heartbeat([this] { HeartbeatLoop(); });
    absl::Status status = deep_ ? TrainDeep() : Train();
    if (status.ok()) status = FlushPushes();
    if (status.ok() && checkpoints_) ArriveFinished();
    Fail(status);
    if (status.ok()) {
      status = coordinator_.Barrier("trained", config_.cluster().num_trainers(),
                                    rank_);
    }
    if (status.ok() && async_ != nullptr && rank_ == 0) {
      status = PullFinalDense();
    }
    if (status.ok()) status = Export();
    if (status.ok() && rank_ == 0) status = Evaluate();
    finished_.store(true);
    stop_.Notify();
    heartbeat.join();
    if (status.ok()) SendHeartbeat();  // report "finished"
    return status;
  }

 private:
  absl::Status Connect() {
    if (absl::Status s = coordinator_.Register(coord::TRAINER, rank_, "");
        !s.ok()) {
      return s;
    }
    absl::StatusOr<coord::ClusterSpec> spec = coordinator_.WaitClusterSpec();
    if (!spec.ok()) return spec.status();
    PsClientOptions options;
    for (const coord::Member& m : spec->pservers()) {
      options.pserver_addresses.push_back(m.address());
    }
    options.num_shards = config_.table().num_shards();
    options.row_dim = model_.row_dim();
    options.deadline = Seconds(config_.cluster().rpc_deadline_seconds());
    // A fresh writer per incarnation: a restarted trainer's sequences start
    // again at 1 and must not be taken for replays of the old ones.
    options.writer_id =
        (uint64_t{static_cast<uint32_t>(rank_)} << 32) | std::random_device{}();
    options.credentials = credentials_;
    ps_ = PsClient::Create(options);
    if (HasDenseTable(config_)) {
      // Its own sequences: the dense table dedups pushes on its own.
      options.table_id = kDenseTableId;
      ps_dense_ = PsClient::Create(options);
    }
    SAMPAN_LOG(INFO) << "trainer " << rank_ << " connected to "
                     << options.pserver_addresses.size() << " pservers";
    return absl::OkStatus();
  }

  // Waits until every push of this trainer is acknowledged, both tables'.
  absl::Status FlushPushes() {
    absl::Status s = ps_->Flush();
    if (s.ok() && ps_dense_ != nullptr) s = ps_dense_->Flush();
    return s;
  }

  absl::Status Train() {
    std::vector<std::thread> workers;
    for (uint32_t t = 0; t < config_.cluster().threads_per_trainer(); ++t) {
      workers.emplace_back([this] { Fail(WorkerLoop()); });
    }
    for (std::thread& w : workers) w.join();
    absl::MutexLock lock(&mu_);
    return error_;
  }

  // Each batch passes the checkpoint gate, so that a checkpoint finds no
  // batch between Next and its queued push.
  absl::Status WorkerLoop() {
    Scratch s;
    absl::Status read_status;
    while (!Failed()) {
      absl::Status st = gate_.Enter();
      const bool got = st.ok() && input_.Next(&s.batch, &read_status);
      if (got) {
        gate_.Took();
        st = TrainBatch(&s);
      }
      gate_.Leave();
      if (!st.ok()) return st;
      if (!got) break;
    }
    return read_status;
  }

  // Runs while no batch is in flight (CheckpointGate): makes every push
  // acknowledged, then arrives with this rank's position and waits for the
  // checkpoint to end. A coordinator that cannot be reached abandons only
  // this checkpoint: training goes on.
  absl::StatusOr<uint64_t> TakeCheckpoint(uint64_t epoch, bool missed) {
    if (absl::Status s = FlushPushes(); !s.ok()) return s;
    coord::CheckpointArriveRequest req;
    req.set_epoch(epoch);
    req.set_missed(missed);
    *req.mutable_position() = input_.Position();
    req.mutable_position()->set_steps(gate_.steps());
    if (dense_ != nullptr && rank_ == 0 && !missed) {
      // Every rank holds the same dense state; rank 0 saves it. (ASYNC
      // keeps it in pserver rows, which the snapshots hold.)
      absl::StatusOr<std::string> path = SaveDenseForCheckpoint();
      if (!path.ok()) return path.status();
      req.set_dense_file(*path);
    }
    const absl::Time start = absl::Now();
    absl::StatusOr<coord::CheckpointArriveResponse> resp =
        coordinator_.CheckpointArrive(
            req, Seconds(config_.checkpoint().timeout_seconds() +
                         2 * config_.cluster().rpc_deadline_seconds()));
    if (!resp.ok()) {
      SAMPAN_LOG(WARNING) << "trainer " << rank_ << ": checkpoint at step "
                          << gate_.steps() << ": " << resp.status().message();
      return epoch;
    }
    const coord::DataPosition& p = req.position();
    SAMPAN_LOG(INFO) << "trainer " << rank_ << ": checkpoint " << resp->epoch()
                     << (resp->completed() ? " taken" : " abandoned (")
                     << (resp->completed() ? "" : resp->reason() + ")")
                     << " at step " << p.steps() << ", file " << p.file_index()
                     << " offset " << p.byte_offset() << WindowNote(p)
                     << ", paused "
                     << absl::FormatDuration(absl::Now() - start);
    return resp->epoch();
  }

  // Writes the dense weights and optimizer state where the coordinator
  // moves them into the checkpoint from (it must see the same path).
  absl::StatusOr<std::string> SaveDenseForCheckpoint() {
    const std::string root =
        std::filesystem::absolute(CheckpointRoot(config_)).string();
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    const std::string path =
        absl::StrCat(root, "/dense-step", gate_.steps(), ".bin");
    absl::Status s = SaveDenseModel(path, *ctr_, dense_->State());
    if (!s.ok()) return s;
    return path;
  }

  // A rank out of input counts as arrived at every later checkpoint; its
  // position says so, so a resume does not train its part again.
  void ArriveFinished() {
    coord::CheckpointArriveRequest req;
    *req.mutable_position() = input_.Position();
    req.mutable_position()->set_steps(gate_.steps());
    req.mutable_position()->set_finished(true);
    absl::StatusOr<coord::CheckpointArriveResponse> resp =
        coordinator_.CheckpointArrive(
            req, Seconds(config_.checkpoint().timeout_seconds() +
                         2 * config_.cluster().rpc_deadline_seconds()));
    if (!resp.ok()) {
      SAMPAN_LOG(WARNING) << "trainer " << rank_
                          << ": reporting the end of input for checkpoints: "
                          << resp.status().message();
    }
  }

  absl::Status TrainBatch(Scratch* s) {
    s->Dedup();
    const size_t floats = s->keys.size() * model_.row_dim();
    s->rows.resize(floats);
    if (absl::Status st = ps_->Pull(s->keys, true, s->rows.data()); !st.ok()) {
      return st;
    }
    s->grads.assign(floats, 0.0f);
    s->probs.resize(s->batch.size());
    const double loss = model_.Step(s->batch, s->row_of_sign, 0, s->rows.data(),
                                    s->grads.data(), s->probs.data());
    s->CountShowsAndClicks();
    absl::Status st = ps_->PushAsync(s->keys, s->grads, s->shows, s->clicks);
    Account(*s, loss);
    return st;
  }

  void Account(const Scratch& s, double loss) {
    absl::MutexLock lock(&mu_);
    examples_ += s.batch.size();
    loss_sum_ += loss;
    for (size_t e = 0; e < s.batch.size(); ++e) {
      auc_.Add(s.probs[e], s.batch.labels[e]);
    }
  }

  // Deep models, hybrid mode (trainer/hybrid_dense.h): one step loop per
  // rank, in lockstep with the other ranks through the dense allreduce.
  absl::Status TrainDeep() {
    absl::StatusOr<LocalTrainOptions> o = LocalOptionsFromJob(config_);
    if (!o.ok()) return o.status();
    ctr_ = std::make_unique<CtrModel>(o->model);
    if (config_.model().mode() == ModelConfig::ASYNC) return TrainAsync();
    if (absl::Status g = PlaceDenseTower(); !g.ok()) return g;
    HybridDenseOptions h;
    h.coordinator_address = coordinator_.address();
    h.rank = rank_;
    h.size = config_.cluster().num_trainers();
    h.timeout = Seconds(config_.cluster().wait_timeout_seconds());
    if (const char* k = std::getenv("SAMPAN_DENSE_CHECK_EVERY")) {
      h.check_every = std::strtoull(k, nullptr, 10);
    }
    if (const char* r = std::getenv("SAMPAN_DENSE_TEST_SKEW_RANK")) {
      h.skew_rank = std::atoi(r);
    }
    h.optimizer = o->dense;
    h.generation = generation_;
    // The rendezvous goes through the coordinator: same TLS and token.
    h.credentials = credentials_;
    DenseModelState initial;
    if (!dense_path_.empty()) {
      absl::StatusOr<DenseModelState> loaded =
          LoadDenseModel(dense_path_, *ctr_);
      if (!loaded.ok()) return loaded.status();
      initial = std::move(*loaded);
      h.initial = &initial;
    }
    absl::StatusOr<std::unique_ptr<HybridDense>> d =
        HybridDense::Create(*ctr_, h);
    if (!d.ok()) return d.status();
    dense_ = std::move(*d);
    SAMPAN_LOG(INFO) << "trainer " << rank_ << ": hybrid " << ctr_->dense_size()
                     << " dense weights";
    absl::Status status = DeepLoop();
    if (!status.ok()) return status;
    absl::StatusOr<uint64_t> hash = dense_->Finish();
    if (!hash.ok()) return hash.status();
    return WriteDenseHash(*hash);
  }

  // model.dense_device: the MLP on the GPU (gpu_) or the CPU.
  absl::Status PlaceDenseTower() {
    const DenseDevice device = config_.model().dense_device();
    if (device == CPU) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<GpuMlp>> g =
        GpuMlp::Create(ctr_->mlp(), ctr_->dense_size(), GpuMlpOptions());
    if (!g.ok()) {
      if (device == GPU) return g.status();
      SAMPAN_LOG(INFO) << "trainer " << rank_
                       << ": MLP on the CPU: " << g.status().message();
      return absl::OkStatus();
    }
    gpu_ = std::move(*g);
    SAMPAN_LOG(INFO) << "trainer " << rank_ << ": MLP on the GPU (cuBLAS)";
    return absl::OkStatus();
  }

  absl::Status DeepLoop() {
    Scratch s;
    CtrModel::Workspace ws;
    ws.gpu = gpu_.get();  // evaluation stays on the CPU
    absl::Status read_status, step_status;
    while (true) {
      // Every rank has the same step count here (lockstep), so the gate
      // pauses them all at the same step for a checkpoint.
      step_status = gate_.Enter();
      bool trained =
          step_status.ok() && !Failed() && input_.Next(&s.batch, &read_status);
      if (trained) gate_.Took();
      double loss = 0;
      if (trained) {
        s.Dedup();
        const size_t floats = s.keys.size() * model_.row_dim();
        s.rows.resize(floats);
        step_status = ps_->Pull(s.keys, true, s.rows.data());
        trained = step_status.ok();
      }
      dense_->BeginStep(trained, s.batch.size());
      if (trained) {
        s.grads.assign(s.rows.size(), 0.0f);
        s.probs.resize(s.batch.size());
        // Each layer's allreduce starts as backward finishes it, except in
        // SYNC, whose barrier is that no bucket is reduced before the flush.
        loss = ctr_->Step(s.batch, s.row_of_sign, 0, s.rows.data(),
                          dense_->weights(), s.grads.data(), dense_->grads(),
                          s.probs.data(), &ws,
                          sync_ ? nullptr : dense_->grad_ready());
        s.CountShowsAndClicks();
        step_status = ps_->PushAsync(s.keys, s.grads, s.shows, s.clicks);
        // SYNC: this step's rows are applied before the allreduce below
        // lets any rank pull for the next one.
        if (sync_ && step_status.ok()) step_status = ps_->Flush();
        Account(s, loss);
      }
      // Even a rank that failed takes part in this step, so that the others
      // see it out of data and stop at once rather than time out.
      absl::StatusOr<bool> all = dense_->Step();
      gate_.Leave();
      if (!step_status.ok()) return step_status;
      if (!all.ok()) return all.status();
      if (!*all) break;
    }
    SAMPAN_LOG(INFO) << "trainer " << rank_ << ": " << dense_->steps()
                     << " synchronous dense steps ("
                     << (sync_ ? "SYNC" : "HYBRID") << ")";
    if (!read_status.ok()) return read_status;
    absl::MutexLock lock(&mu_);
    return error_;  // e.g. the heartbeat's
  }

  // model.mode ASYNC: threads_per_trainer Hogwild workers; the dense rows
  // ride with every batch's pull and push (trainer/async_dense.h).
  absl::Status TrainAsync() {
    async_ = std::make_unique<AsyncDense>(*ctr_, model_.row_dim());
    SAMPAN_LOG(INFO) << "trainer " << rank_ << ": async, " << async_->size()
                     << " dense weights in " << async_->keys().size()
                     << " pserver rows of table " << kDenseTableId
                     << ", updated there by model.dense_optimizer";
    std::vector<std::thread> workers;
    for (uint32_t t = 0; t < config_.cluster().threads_per_trainer(); ++t) {
      workers.emplace_back([this] { Fail(AsyncLoop()); });
    }
    for (std::thread& w : workers) w.join();
    absl::MutexLock lock(&mu_);
    return error_;
  }

  // Each batch passes the checkpoint gate, as in WorkerLoop.
  absl::Status AsyncLoop() {
    AsyncScratch a(async_->size());
    absl::Status read_status;
    while (!Failed()) {
      absl::Status st = gate_.Enter();
      const bool got = st.ok() && input_.Next(&a.s.batch, &read_status);
      if (got) {
        gate_.Took();
        st = AsyncBatch(&a);
      }
      gate_.Leave();
      if (!st.ok()) return st;
      if (!got) break;
    }
    return read_status;
  }

  struct AsyncScratch {
    explicit AsyncScratch(size_t dense) : weights(dense) {}
    Scratch s;
    CtrModel::Workspace ws;
    std::vector<float> weights, dense_grads;
    // Table kDenseTableId's rows: pulled, then reused for their gradients.
    std::vector<float> dense_rows, dense_counts, dense_clicks;
  };

  absl::Status AsyncBatch(AsyncScratch* a) {
    Scratch& s = a->s;
    std::vector<float>& weights = a->weights;
    std::vector<float>& dense_grads = a->dense_grads;
    const int rd = model_.row_dim();
    s.Dedup();
    s.rows.resize(s.keys.size() * rd);
    absl::Status st = ps_->Pull(s.keys, true, s.rows.data());
    if (!st.ok()) return st;
    const std::vector<uint64_t>& dense_keys = async_->keys();
    a->dense_rows.resize(dense_keys.size() * rd);
    st = ps_dense_->Pull(dense_keys, true, a->dense_rows.data());
    if (!st.ok()) return st;
    async_->Weights(a->dense_rows.data(), weights.data());
    s.grads.assign(s.rows.size(), 0.0f);
    dense_grads.assign(weights.size(), 0.0f);
    s.probs.resize(s.batch.size());
    const double loss =
        ctr_->Step(s.batch, s.row_of_sign, 0, s.rows.data(), weights.data(),
                   s.grads.data(), dense_grads.data(), s.probs.data(), &a->ws);
    s.CountShowsAndClicks();
    st = ps_->PushAsync(s.keys, s.grads, s.shows, s.clicks);
    if (st.ok()) {
      // The per-example mean, as SYNC and HYBRID apply (async_dense.h).
      async_->GradRows(dense_grads.data(), 1.0f / s.batch.size(),
                       a->dense_rows.data());
      a->dense_counts.assign(dense_keys.size(), float(s.batch.size()));
      a->dense_clicks.assign(dense_keys.size(), 0.0f);
      st = ps_dense_->PushAsync(dense_keys, a->dense_rows, a->dense_counts,
                                a->dense_clicks);
    }
    Account(s, loss);
    return st;
  }

  // ASYNC, after the "trained" barrier: the weights the pservers ended with.
  absl::Status PullFinalDense() {
    std::vector<float> rows(async_->keys().size() * model_.row_dim());
    absl::Status s = ps_dense_->Pull(async_->keys(), false, rows.data());
    if (!s.ok()) return s;
    final_dense_.resize(async_->size());
    async_->Weights(rows.data(), final_dense_.data());
    return absl::OkStatus();
  }

  const float* DenseWeights() const {
    return async_ != nullptr ? final_dense_.data() : dense_->weights();
  }

  absl::Status WriteDenseHash(uint64_t hash) {
    const std::string path =
        absl::StrCat(config_.output_dir(), "/dense_hash-", rank_, ".txt");
    const std::string line = absl::StrFormat("%016x", hash);
    std::ofstream out(path);
    out << line << "\n";
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    SAMPAN_LOG(INFO) << "trainer " << rank_ << ": dense weights hash " << line
                     << " after " << dense_->steps() << " steps";
    return absl::OkStatus();
  }

  // After the "trained" barrier; see part_export.h.
  absl::Status Export() {
    const int trainers = config_.cluster().num_trainers();
    absl::Status s =
        ExportTrainerPart(config_, rank_, model_.row_dim(),
                          [this](absl::Span<const uint64_t> keys, float* out) {
                            return ps_->Pull(keys, false, out);
                          });
    if (s.ok() && rank_ == 0) s = SaveDense();
    if (s.ok()) s = coordinator_.Barrier("exported", trainers, rank_);
    if (s.ok() && rank_ == 0) {
      ModelManifest manifest;
      manifest.sparse_parts = trainers;
      s = FinishModelDir(ModelDir(config_), config_, manifest);
    }
    return s;
  }

  absl::Status SaveDense() {
    const std::string path = DenseModelPath(ModelDir(config_));
    if (async_ != nullptr) {
      // The optimizer's state lives in the pservers' rows.
      DenseModelState state;
      state.weights = final_dense_;
      return SaveDenseModel(path, *ctr_, state);
    }
    if (deep_) return SaveDenseModel(path, *ctr_, dense_->State());
    absl::StatusOr<LocalTrainOptions> o = LocalOptionsFromJob(config_);
    if (!o.ok()) return o.status();
    return SaveDenseModel(path, CtrModel(o->model), DenseModelState());
  }

  absl::Status Evaluate() {
    // LR and FM train with FmModel but score here with CtrModel, as `sampan
    // eval` scores their export (trainer/eval_job.cc): the two sum in
    // different orders, and one model must get one AUC from both.
    std::unique_ptr<CtrModel> lr_fm;
    if (!deep_) {
      absl::StatusOr<LocalTrainOptions> o = LocalOptionsFromJob(config_);
      if (!o.ok()) return o.status();
      lr_fm = std::make_unique<CtrModel>(o->model);
    }
    const CtrModel& scorer = deep_ ? *ctr_ : *lr_fm;
    const float* dense = deep_ ? DenseWeights() : nullptr;
    std::vector<float> probs, labels;
    Scratch s;
    CtrModel::Workspace ws;
    for (const std::string& path : config_.data().test_files()) {
      CriteoReaderOptions options;
      options.empty_field_signs = config_.data().empty_field_signs();
      auto reader = CriteoReader::Open(path, options);
      if (!reader.ok()) return reader.status();
      while ((*reader)->NextBatch(config_.data().batch_size(), &s.batch)) {
        s.Dedup();
        s.rows.resize(s.keys.size() * model_.row_dim());
        absl::Status st = ps_->Pull(s.keys, false, s.rows.data());
        if (!st.ok()) return st;
        s.probs.resize(s.batch.size());
        scorer.Step(s.batch, s.row_of_sign, 0, s.rows.data(), dense, nullptr,
                    nullptr, s.probs.data(), &ws);
        probs.insert(probs.end(), s.probs.begin(), s.probs.end());
        labels.insert(labels.end(), s.batch.labels.begin(),
                      s.batch.labels.end());
      }
      // A truncated test file must not score as a smaller one.
      if (!(*reader)->read_status().ok()) return (*reader)->read_status();
    }
    return WriteResult(probs, labels);
  }

  absl::Status WriteResult(const std::vector<float>& probs,
                           const std::vector<float>& labels) {
    const double auc = ExactAuc(probs, labels);
    const double logloss = LogLoss(probs, labels);
    double predicted = 0, clicks = 0;
    for (size_t i = 0; i < probs.size(); ++i) {
      predicted += probs[i];
      clicks += labels[i];
    }
    const std::string path = ResultPath(config_);
    std::ofstream out(path);
    out << absl::StrFormat(
        "test_auc=%.6f\ntest_logloss=%.6f\ntest_rows=%d\ntest_copc=%.4f\n", auc,
        logloss, probs.size(), predicted > 0 ? clicks / predicted : 0.0);
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
    SAMPAN_LOG(INFO) << absl::StrFormat("test AUC %.4f logloss %.4f on %d rows",
                                        auc, logloss, probs.size());
    return absl::OkStatus();
  }

  void HeartbeatLoop() {
    const absl::Duration interval =
        Seconds(std::min(1.0, config_.progress_interval_seconds()));
    const absl::Duration timeout =
        Seconds(config_.cluster().heartbeat_timeout_seconds());
    absl::Time last_ok = absl::Now();
    while (!stop_.WaitForNotificationWithTimeout(interval)) {
      if (SendHeartbeat().ok()) {
        last_ok = absl::Now();
      } else if (absl::Now() - last_ok > timeout) {
        Fail(absl::UnavailableError(absl::StrCat(
            "coordinator ", coordinator_.address(), " unreachable for ",
            absl::FormatDuration(absl::Now() - last_ok))));
        return;
      }
    }
  }

  absl::Status SendHeartbeat() {
    coord::HeartbeatRequest req;
    req.set_role(coord::TRAINER);
    req.set_index(rank_);
    coord::TrainerProgress* p = req.mutable_progress();
    p->set_fraction_done(input_.FractionDone());
    p->set_bad_rows(input_.BadRows());
    p->set_finished(finished_.load());
    p->set_steps(gate_.steps());
    {
      absl::MutexLock lock(&mu_);
      p->set_examples(examples_);
      p->set_loss_sum(loss_sum_);
      p->set_train_auc(auc_.Auc());
    }
    coord::HeartbeatResponse resp;
    absl::Status s = coordinator_.Heartbeat(req, &resp);
    if (s.ok() && resp.checkpoint_epoch() > 0) {
      gate_.Announce(resp.checkpoint_epoch(), resp.checkpoint_at_step());
    }
    return s;
  }

  void Fail(const absl::Status& status) {
    if (status.ok()) return;
    absl::MutexLock lock(&mu_);
    if (error_.ok()) error_ = status;
  }

  bool Failed() {
    absl::MutexLock lock(&mu_);
    return !error_.ok();
  }

  const JobConfig& config_;
  // Resume: the checkpoint's dense state (hybrid jobs); "" for none.
  const std::string dense_path_;
  const uint64_t generation_;  // of the hybrid collective group
  const int rank_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  CoordinatorClient coordinator_;
  const FmModel model_;
  InputQueue input_;
  // Deep models: the model and its dense weights, owned by the step loop
  // (TrainDeep) and read by Evaluate only after it ended.
  const bool deep_;
  std::unique_ptr<CtrModel> ctr_;
  std::unique_ptr<HybridDense> dense_;
  std::unique_ptr<GpuMlp> gpu_;  // the MLP's device, when on the GPU
  const bool sync_;
  std::unique_ptr<AsyncDense> async_;  // ASYNC only
  std::vector<float> final_dense_;     // ASYNC, rank 0, after training
  std::unique_ptr<PsClient> ps_;
  std::unique_ptr<PsClient> ps_dense_;  // table kDenseTableId, ASYNC only
  const bool checkpoints_;  // checkpoint.every_steps or every_seconds set
  CheckpointGate gate_;
  absl::Notification stop_;
  std::atomic<bool> finished_{false};

  absl::Mutex mu_;  // guards the progress counters and the first error
  uint64_t examples_ ABSL_GUARDED_BY(mu_) = 0;
  double loss_sum_ ABSL_GUARDED_BY(mu_) = 0;
  StreamingAuc auc_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::string ResultPath(const JobConfig& config) {
  return absl::StrCat(config.output_dir(), "/result.txt");
}

absl::Status RunTrainer(const JobConfig& config, int rank,
                        const std::string& coordinator_address,
                        const std::string& checkpoint_dir,
                        uint64_t generation) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(SecurityOptionsFromJob(config));
  if (!credentials.ok()) return credentials.status();
  coord::DataPosition start;
  bool resume = false;
  std::string dense_path;
  if (!checkpoint_dir.empty()) {
    // The launcher verified the files; the trainer reads its position only.
    absl::StatusOr<coord::CheckpointManifest> m =
        ReadManifest(checkpoint_dir, /*verify=*/false);
    if (!m.ok()) return m.status();
    for (const coord::DataPosition& p : m->trainers()) {
      if (p.rank() == rank) {
        start = p;
        resume = true;
      }
    }
    if (m->has_dense()) dense_path = checkpoint_dir + "/dense.bin";
    if (!resume) {
      return absl::NotFoundError(absl::StrCat(
          checkpoint_dir, "/MANIFEST has no position for trainer ", rank));
    }
    SAMPAN_LOG(INFO) << "trainer " << rank << " resumes from checkpoint "
                     << m->epoch() << " (" << checkpoint_dir << "): file "
                     << start.file_index() << " offset " << start.byte_offset()
                     << WindowNote(start) << ", step " << start.steps() << ", "
                     << start.rows() << " rows done"
                     << (start.finished() ? " (finished)" : "");
  }
  Trainer trainer(config, rank, coordinator_address, *credentials,
                  resume ? &start : nullptr, dense_path, generation);
  return trainer.Run();
}

}  // namespace sampan
