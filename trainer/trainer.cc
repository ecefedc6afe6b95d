#include "trainer/trainer.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/config.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/security.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/client.h"
#include "sparse_table/job_options.h"
#include "trainer/checkpoint_gate.h"
#include "trainer/client/ps_client.h"
#include "trainer/data/criteo_reader.h"
#include "trainer/dataset_source.h"
#include "trainer/early_stop.h"
#include "trainer/eval/auc.h"
#include "trainer/input_queue.h"
#include "trainer/local_job.h"
#include "trainer/model/ctr_model.h"
#include "trainer/pass_publisher.h"
#include "trainer/pass_schedule.h"
#include "trainer/pass_score.h"
#include "trainer/rank_checkpoint.h"
#include "trainer/rank_dense.h"
#include "trainer/rank_heartbeat.h"
#include "trainer/rank_merge.h"
#include "trainer/rank_outputs.h"
#include "trainer/rank_progress.h"
#include "trainer/rare_count.h"
#include "trainer/report.h"
#include "trainer/step_loop.h"
#include "trainer/warm_start.h"
#include "trainer/word_job.h"

namespace sampan {
namespace {

absl::Duration Seconds(double s) { return absl::Seconds(s); }

class Trainer : public StepObserver {
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
        start_(start != nullptr ? std::optional<coord::DataPosition>(*start)
                                : std::nullopt),
        sync_(config.model().mode() == ModelConfig::SYNC),
        checkpoints_(TakesCheckpoints(config)),
        gate_(config.checkpoint().every_steps(), start ? start->steps() : 0,
              [this](uint64_t epoch, bool missed) {
                return TakeCheckpoint(epoch, missed);
              }),
        progress_(start != nullptr ? start->rows() : 0, IsStreamJob(config)) {}

  absl::Status Run() {
    absl::StatusOr<LocalTrainOptions> o = LocalOptionsFromJob(config_);
    if (!o.ok()) return o.status();
    model_ = std::make_unique<CtrModel>(o->model);
    if (absl::Status s = Connect(); !s.ok()) return s;
    RankHeartbeat heartbeat(HeartbeatOptions());
    heartbeat.Start();
    // Counting reads the training data once: heartbeats go on meanwhile.
    absl::StatusOr<std::unique_ptr<RareSigns>> rare = CountJobSigns(config_);
    absl::Status status = rare.status();
    if (status.ok()) {
      rare_ = std::move(*rare);
      status = SetUpWords();
    }
    if (status.ok()) status = SetUpDense(o->dense);
    if (status.ok()) SetUpEarlyStop();
    // The passes: a batch job's one, or a stream's as they become ready.
    // A stream resumed from a checkpoint goes on after its last pass.
    PassScheduleStart resume;
    resume.generation = generation_;
    if (start_.has_value() && IsStreamJob(config_)) {
      resume.next_index = start_->pass_index();
      resume.last_pass = start_->pass_name();
      start_.reset();
      if (status.ok() && publisher_ != nullptr) {
        status = publisher_->Resume(resume.next_index, resume.last_pass);
      }
    }
    PassSchedule schedule(config_, rank_, &coordinator_, progress_.failed(),
                          resume);
    schedule_ = &schedule;
    const absl::Time train_start = absl::Now();
    while (status.ok()) {
      absl::StatusOr<coord::StreamPass> pass = schedule.Next();
      status = pass.status();
      if (!status.ok() || pass->end()) break;
      status = RunPass(*pass);
    }
    schedule_ = nullptr;
    if (status.ok() && words_ != nullptr) {
      LogWordRate(rank_, progress_.tokens(), absl::Now() - train_start);
    }
    if (status.ok()) status = dense_->Finish();
    if (status.ok() && checkpoints_ && !IsStreamJob(config_)) {
      coord::DataPosition position = CurrentInput()->Position();
      position.set_steps(gate_.steps());
      arrivals_->ArriveFinished(position);
    }
    Fail(status);
    if (status.ok()) {
      SAMPAN_LOG(INFO) << "trainer " << rank_
                       << ": trained; waiting for every trainer (barrier "
                          "'trained')";
      status = coordinator_.Barrier("trained", config_.cluster().num_trainers(),
                                    rank_);
    }
    // A stream's model is its published versions; a batch job exports one.
    if (status.ok() && !IsStreamJob(config_)) {
      status = ExportRankModel(Outputs());
    }
    if (status.ok() && rank_ == 0 && !TestPartsOf(config_).empty()) {
      status = EvaluateTestData(Outputs());
    }
    if (status.ok() && rank_ == 0 && early_stop_ != nullptr) {
      status = early_stop_->AppendResult(ResultPath(config_));
    }
    if (status.ok() && rank_ == 0 && words_ != nullptr) {
      status = WriteWordResult(config_, *vocab_, -1);
    }
    if (status.ok() && rank_ == 0 && IsStreamJob(config_)) {
      // Appended to the test metrics when Evaluate wrote them.
      status = publisher_->WriteResult(ResultPath(config_),
                                       !TestPartsOf(config_).empty());
    }
    finished_.store(true);
    heartbeat.Stop();
    // Report "finished" at once, best effort: the next heartbeat would
    // not come, and the launcher also sees the process exit 0.
    if (status.ok()) heartbeat.SendNow().IgnoreError();
    return status;
  }

  // Counts a trained batch (any worker thread).
  absl::Status Trained(const Worker& w, double loss) override {
    progress_.Trained(w, loss);
    return absl::OkStatus();
  }

 private:
  absl::Status Connect() {
    coord::RegisterResponse registered;
    if (absl::Status s =
            coordinator_.Register(coord::TRAINER, rank_, "", &registered);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<coord::ClusterSpec> spec = coordinator_.WaitClusterSpec();
    if (!spec.ok()) return spec.status();
    PsClientOptions options;
    options.shard_map = CoordinatorClient::ToShardMap(spec->shard_map());
    if (absl::Status s = ValidateShardMap(options.shard_map); !s.ok()) {
      return absl::InternalError(
          absl::StrCat("the coordinator's ", s.message()));
    }
    // A pserver that comes back at another address is followed.
    options.fetch_shard_map = [this] { return coordinator_.GetShardMap(); };
    options.row_dim = model_->row_dim();
    options.deadline = Seconds(config_.cluster().rpc_deadline_seconds());
    // A fresh writer per incarnation, never one an earlier writer had: a
    // restarted trainer's sequences start again at 1 and must not be taken
    // for replays of the old ones (coordinator/id_source.h).
    options.writer_id = registered.writer_id();
    if (options.writer_id == 0) {
      return absl::InternalError(
          "Register: the coordinator issued no writer id");
    }
    options.credentials = credentials_;
    ps_ = PsClient::Create(options);
    if (HasDenseTable(config_)) {
      // Its own sequences: the dense table dedups pushes on its own.
      options.table_id = kDenseTableId;
      ps_dense_ = PsClient::Create(options);
    }
    SAMPAN_LOG(INFO) << "trainer " << rank_ << " connected to "
                     << options.shard_map.num_pservers()
                     << " pservers (shard map version "
                     << options.shard_map.version << ", writer "
                     << options.writer_id << ")";
    return absl::OkStatus();
  }

  // Waits until every push of this trainer is acknowledged, both tables'.
  absl::Status FlushPushes() {
    absl::Status s = ps_->Flush();
    if (s.ok() && ps_dense_ != nullptr) s = ps_dense_->Flush();
    return s;
  }

  // The dense weights decide the step loop's shape (trainer/step_loop.h):
  // none (LR, FM) and the pservers' dense table (ASYNC; LR and FM with
  // dense inputs) train threads_per_trainer Hogwild loops; HYBRID and SYNC
  // one lockstep loop per rank whose steps are threads_per_trainer batches,
  // allreduced with the other ranks (trainer/hybrid_dense.h).
  absl::Status SetUpDense(const DenseOptimizerOptions& optimizer) {
    rows_ = FleetRows(ps_.get(), model_->row_dim());
    RankDenseOptions d;
    d.config = &config_;
    d.rank = rank_;
    d.model = model_.get();
    d.ps_dense = ps_dense_.get();
    d.coordinator_address = coordinator_.address();
    d.credentials = credentials_;
    d.generation = generation_;
    d.resume_path = dense_path_;
    d.optimizer = optimizer;
    absl::StatusOr<std::unique_ptr<RankDense>> dense = RankDense::Start(d);
    if (!dense.ok()) return dense.status();
    dense_ = std::move(*dense);
    RankCheckpointOptions c;
    c.config = &config_;
    c.rank = rank_;
    c.coordinator = &coordinator_;
    c.dense = dense_.get();
    arrivals_ = std::make_unique<RankCheckpoints>(c);
    const int ranks = config_.cluster().num_trainers();
    if (dense_->lockstep() && ranks > 1) {
      // A lockstep step's sparse gradients are summed across the ranks and
      // each key pushed once (trainer/rank_merge.h).
      RankMergeOptions m;
      m.coordinator_address = coordinator_.address();
      m.credentials = credentials_;
      m.rank = rank_;
      m.size = ranks;
      m.timeout = absl::Seconds(config_.cluster().wait_timeout_seconds());
      m.generation = generation_;
      absl::StatusOr<std::unique_ptr<CollectiveRankMerge>> merge =
          CollectiveRankMerge::Join(m);
      if (!merge.ok()) return merge.status();
      merge_ = std::move(*merge);
    }
    if (IsStreamJob(config_)) {
      PassPublisherOptions p;
      p.config = &config_;
      p.rank = rank_;
      p.coordinator = &coordinator_;
      p.ps = ps_.get();
      p.model = model_.get();
      p.generation = generation_;
      publisher_ = std::make_unique<PassPublisher>(p);
    }
    return absl::OkStatus();
  }

  // One pass: a data.stream pass is first scored by the model as it is
  // (progressive validation), then trained once; the batch job's one pass
  // is its data.train_files, data.epochs times, from a checkpoint's position
  // on a resume. Every push is acknowledged on return.
  absl::Status RunPass(const coord::StreamPass& pass) {
    auto pass_config =
        std::make_shared<const JobConfig>(PassConfig(config_, pass));
    // A batch job's resume starts at its checkpoint's position.
    auto input = std::make_shared<InputQueue>(
        *pass_config, rank_, start_.has_value() ? &*start_ : nullptr);
    start_.reset();
    {
      std::lock_guard<std::mutex> lock(input_mu_);
      pass_config_ = pass_config;
      input_ = input;
      pass_name_ = pass.name();
    }
    if (publisher_ != nullptr) {
      if (absl::Status s = publisher_->BeginPass(pass); !s.ok()) return s;
      if (absl::Status s = ScorePassBeforeTraining(pass, *pass_config);
          !s.ok()) {
        return s;
      }
      progress_.TakeKeys();  // scoring the pass pushed none
    }
    QueueSource source(input.get());
    source.set_rare(rare_.get());
    StepLoopOptions loop;
    loop.model = words_ != nullptr ? nullptr : model_.get();
    loop.words = words_.get();
    loop.source = &source;
    loop.rows = rows_.get();
    loop.dense = dense_->weights();
    loop.observer = this;
    loop.gate = &gate_;
    loop.threads =
        std::max<uint32_t>(1, config_.cluster().threads_per_trainer());
    loop.ranks = merge_.get();
    loop.flush_each_step = sync_;
    loop.gpu = dense_->gpu();
    loop.stop = progress_.failed();
    uint64_t steps = 0;
    absl::Status status = early_stop_ != nullptr
                              ? TrainEpochs(loop, input.get(), &steps)
                              : TrainOnce(loop, &steps);
    if (!status.ok()) return status;
    if (dense_->lockstep()) {
      SAMPAN_LOG(INFO) << "trainer " << rank_ << ": " << steps
                       << " synchronous dense steps ("
                       << (sync_ ? "SYNC" : "HYBRID") << "), up to "
                       << loop.threads << " batches each";
    }
    if (merge_ != nullptr) {
      const CollectiveRankMerge::Stats& m = merge_->stats();
      SAMPAN_LOG(INFO) << "trainer " << rank_ << ": rank merge: " << m.steps
                       << " steps, " << m.keys_given << " keys given, "
                       << m.keys_pushed << " pushed (owned), "
                       << absl::FormatDuration(m.exchange_time)
                       << " in exchanges (so far)";
    }
    if (publisher_ == nullptr) return absl::OkStatus();
    absl::StatusOr<coord::PassResult> r = publisher_->EndPass(
        pass, progress_.TakeKeys(), [this] { return dense_->State(); });
    if (!r.ok()) return r.status();
    progress_.PassDone(rank_ == 0 ? &*r : nullptr);
    const uint32_t every = config_.checkpoint().every_passes();
    if (every > 0 && (pass.index() + 1) % every == 0) {
      arrivals_->ArriveAtPassEnd(pass, progress_.examples(), gate_.steps());
    }
    return absl::OkStatus();
  }

  // Runs the step loop to the end of its source, every push acknowledged.
  absl::Status TrainOnce(const StepLoopOptions& loop, uint64_t* steps) {
    absl::Status status = RunStepLoop(loop, steps);
    if (status.ok()) status = progress_.error();  // e.g. the heartbeat's
    if (status.ok()) status = FlushPushes();
    return status;
  }

  // data.validation_fraction: one loop per epoch, each ended by EarlyStop
  // (trainer/early_stop.h) until its decision stops training or the last
  // epoch is done.
  absl::Status TrainEpochs(const StepLoopOptions& loop, InputQueue* input,
                           uint64_t* steps) {
    // A resume that stands at an epoch's start (a checkpoint taken between
    // epochs) ends the epoch before first.
    if (input->AtEpochStart() && input->Epoch() > 0) {
      absl::StatusOr<bool> stop = EndEpoch(input->Epoch() - 1);
      if (!stop.ok()) return stop.status();
      if (*stop) input->Finish();
    }
    while (!input->Done()) {
      uint64_t n = 0;
      if (absl::Status s = TrainOnce(loop, &n); !s.ok()) return s;
      *steps += n;
      absl::StatusOr<bool> stop = EndEpoch(input->Epoch());
      if (!stop.ok()) return stop.status();
      if (*stop) {
        input->Finish();
      } else {
        input->NextEpoch();
      }
    }
    return absl::OkStatus();
  }

  // True: train no more epochs.
  absl::StatusOr<bool> EndEpoch(uint32_t epoch) {
    absl::StatusOr<coord::EpochValidation> d = early_stop_->EndEpoch(epoch);
    if (!d.ok()) return d.status();
    const bool last = epoch + 1 >= config_.data().epochs();
    if (d->stop() && !last) {
      SAMPAN_LOG(INFO) << absl::StrFormat(
          "trainer %d: validation AUC %.4f after epoch %d did not rise; "
          "stopping early (%d of %d epochs)",
          rank_, d->auc(), epoch + 1, epoch + 1, config_.data().epochs());
    }
    return d->stop();
  }

  void SetUpEarlyStop() {
    if (!(config_.data().validation_fraction() > 0) || IsStreamJob(config_)) {
      return;
    }
    EarlyStopOptions e;
    e.config = &config_;
    e.rank = rank_;
    e.coordinator = &coordinator_;
    e.failed = progress_.failed();
    e.idle = [this] { return gate_.Idle(waiting_epoch_.load()); };
    e.score = [this]() -> absl::StatusOr<coord::PassScore> {
      PassScoreOptions o;
      o.model = model_.get();
      o.rows = rows_.get();
      o.batch_size = config_.data().batch_size();
      o.rare = rare_.get();
      absl::StatusOr<const float*> dense = dense_->Current();
      if (!dense.ok()) return dense.status();
      o.dense = *dense;
      return ScorePass(o, ValidationPartsOf(config_, rank_));
    };
    early_stop_ = std::make_unique<EarlyStop>(std::move(e));
  }

  // Progressive validation: this rank's share of `pass`, scored by the
  // model before any of it is trained on; rank 0 merges the ranks' scores.
  absl::Status ScorePassBeforeTraining(const coord::StreamPass& pass,
                                       const JobConfig& pass_config) {
    PassScoreOptions o;
    o.model = model_.get();
    o.rows = rows_.get();
    o.fraction = config_.data().stream().progressive_fraction();
    o.batch_size = config_.data().batch_size();
    o.pass_index = pass.index();
    absl::StatusOr<const float*> dense = dense_->Current();
    if (!dense.ok()) return dense.status();
    o.dense = *dense;
    absl::StatusOr<coord::PassScore> score =
        ScorePass(o, TrainPartsOf(pass_config, rank_));
    if (!score.ok()) return score.status();
    return publisher_->PutScore(pass, *score);
  }

  // The CheckpointGate's callback, run while no batch is in flight: every
  // push acknowledged, then the arrival (trainer/rank_checkpoint.h).
  absl::StatusOr<uint64_t> TakeCheckpoint(uint64_t epoch, bool missed) {
    if (absl::Status s = FlushPushes(); !s.ok()) return s;
    coord::DataPosition position = CurrentInput()->Position();
    position.set_steps(gate_.steps());
    return arrivals_->ArriveMidPass(epoch, missed, position);
  }

  // WORD2VEC: the rank's vocabulary and model (trainer/word_job.h); a
  // resumed one continues the step-size decay from its checkpointed lines.
  absl::Status SetUpWords() {
    if (!IsWordJob(config_)) return absl::OkStatus();
    absl::StatusOr<RankWords> words =
        RankWordsOf(config_, rank_, progress_.examples());
    if (!words.ok()) return words.status();
    vocab_ = std::move(words->vocab);
    words_ = std::move(words->model);
    return absl::OkStatus();
  }

  // trainer/rank_outputs.h.
  RankOutputOptions Outputs() {
    RankOutputOptions o;
    o.config = &config_;
    o.rank = rank_;
    o.coordinator = &coordinator_;
    o.ps = ps_.get();
    o.model = model_.get();
    o.dense = dense_.get();
    o.rows = rows_.get();
    o.rare = rare_.get();
    o.vocab = vocab_.get();
    o.words = words_.get();
    return o;
  }

  std::shared_ptr<InputQueue> CurrentInput() {
    std::lock_guard<std::mutex> lock(input_mu_);
    return input_;
  }

  // The heartbeat's options: beats at most every second; training needs no
  // coordinator, so ride out one that is restarting or stopped for as long
  // as barriers and key-value calls would wait.
  RankHeartbeatOptions HeartbeatOptions() {
    RankHeartbeatOptions h;
    h.coordinator = &coordinator_;
    h.rank = rank_;
    h.interval = Seconds(std::min(1.0, config_.progress_interval_seconds()));
    h.timeout = Seconds(std::max(config_.cluster().heartbeat_timeout_seconds(),
                                 config_.cluster().wait_timeout_seconds()));
    h.fill = [this](coord::TrainerProgress* p) { FillProgress(p); };
    h.answered = [this](const coord::HeartbeatResponse& resp) {
      if (resp.checkpoint_epoch() > 0) {
        gate_.Announce(resp.checkpoint_epoch(), resp.checkpoint_at_step());
      }
      waiting_epoch_.store(resp.checkpoint_waiting_epoch());
    };
    h.lost = [this](const absl::Status& s) { Fail(s); };
    return h;
  }

  void FillProgress(coord::TrainerProgress* p) {
    if (std::shared_ptr<InputQueue> input = CurrentInput()) {
      p->set_fraction_done(input->FractionDone());
      p->set_bad_rows(input->BadRows());
    }
    p->set_finished(finished_.load());
    p->set_steps(gate_.steps());
    p->set_resident_memory_bytes(ResidentMemoryBytes());
    if (const PassSchedule* schedule = schedule_.load()) {
      p->set_waiting_since_unix_seconds(schedule->waiting_since());
      p->set_last_pass(schedule->last());
      if (p->waiting_since_unix_seconds() == 0) {
        std::lock_guard<std::mutex> lock(input_mu_);
        p->set_pass(pass_name_);
      }
    }
    progress_.Fill(p);
  }

  void Fail(const absl::Status& status) { progress_.Fail(status); }

  const JobConfig& config_;
  // Resume: the checkpoint's dense state (hybrid jobs); "" for none.
  const std::string dense_path_;
  const uint64_t generation_;  // of the hybrid collective group
  const int rank_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  CoordinatorClient coordinator_;
  // A checkpoint's position, for the first pass (then reset).
  std::optional<coord::DataPosition> start_;
  // The pass being trained: its config and input, swapped between passes
  // by the trainer's thread, read by the heartbeat's and checkpoints.
  std::mutex input_mu_;
  std::shared_ptr<const JobConfig> pass_config_;
  std::shared_ptr<InputQueue> input_;
  std::string pass_name_;
  std::atomic<const PassSchedule*> schedule_{nullptr};
  std::unique_ptr<PassPublisher> publisher_;  // data.stream jobs only
  std::unique_ptr<EarlyStop> early_stop_;     // data.validation_fraction
  // The checkpoint round the last heartbeat said waits (0: none).
  std::atomic<uint64_t> waiting_epoch_{0};
  // The model and its dense weights (trainer/rank_dense.h).
  std::unique_ptr<CtrModel> model_;
  // WORD2VEC: the vocabulary and the model trained instead of model_.
  std::unique_ptr<Vocabulary> vocab_;
  std::unique_ptr<WordModel> words_;
  std::unique_ptr<RankDense> dense_;
  std::unique_ptr<RankCheckpoints> arrivals_;   // after dense_
  std::unique_ptr<CollectiveRankMerge> merge_;  // lockstep, 2+ ranks
  const bool sync_;
  std::unique_ptr<PsClient> ps_;
  std::unique_ptr<PsClient> ps_dense_;  // table kDenseTableId
  std::unique_ptr<SparseStore> rows_;   // over ps_
  std::unique_ptr<RareSigns> rare_;     // data.min_feature_count; may be null
  const bool checkpoints_;  // checkpoint.every_steps or every_seconds set
  CheckpointGate gate_;
  std::atomic<bool> finished_{false};
  // Counted by the worker threads, read by the heartbeat.
  RankProgress progress_;
};

}  // namespace

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
