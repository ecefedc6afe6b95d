#include "coordinator/checkpointer.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/config.h"
#include "common/coordinator_epoch.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/retry.h"
#include "common/security.h"
#include "coordinator/call_wait.h"
#include "coordinator/checkpoint_store.h"
#include "proto/ps.grpc.pb.h"

namespace sampan {
namespace {

// Snapshot calls in flight at once in a checkpoint round.
constexpr size_t kParallelSnapshots = 64;

constexpr char kSuperseded[] =
    "a newer coordinator took over; this one writes nothing more";

namespace fs = std::filesystem;
using grpc::Status;

struct Metrics {
  prometheus::Counter* completed;
  prometheus::Counter* abandoned;
  prometheus::Histogram* duration;
};

Metrics* GetMetrics() {
  static Metrics* m = [] {
    auto& r = MetricsRegistry();
    auto& total = prometheus::BuildCounter()
                      .Name("sampan_checkpoints_total")
                      .Help("Checkpoints ended, by result.")
                      .Register(r);
    auto& duration =
        prometheus::BuildHistogram()
            .Name("sampan_checkpoint_duration_seconds")
            .Help("From the first trainer's arrival to the manifest.")
            .Register(r);
    return new Metrics{
        &total.Add({{"result", "completed"}}),
        &total.Add({{"result", "abandoned"}}),
        &duration.Add({}, prometheus::Histogram::BucketBoundaries{
                              0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120})};
  }();
  return m;
}

// One epoch being taken. Waiters keep it alive after it ended.
struct Round {
  enum State { kWaiting, kSnapshotting, kCompleted, kAbandoned };
  uint64_t epoch = 0;
  uint64_t at_step = 0;    // announced rounds in hybrid jobs
  bool announced = false;  // time-triggered: heartbeats carry it
  absl::Time start;
  std::map<int, coord::DataPosition> arrived;
  std::string dense_file;
  State state = kWaiting;
  std::string reason;
  bool ended() const { return state == kCompleted || state == kAbandoned; }
  // Signalled (with mu_ held) when the round ends. Waiting on it, rather
  // than on an absl::Condition, keeps the trainers waiting in Arrive off
  // every unlock of mu_: with 2,000 of them each heartbeat's unlock
  // evaluated 2,000 conditions (bench/fleet_sim.cc).
  absl::CondVar ended_cv;
};

class CheckpointerImpl final : public Checkpointer {
 public:
  CheckpointerImpl(const JobConfig& config, CheckpointFleet fleet,
                   CheckpointFence fence)
      : config_(config),
        fleet_(std::move(fleet)),
        fence_(std::move(fence)),
        root_(fs::absolute(CheckpointRoot(config)).string()),
        timeout_(absl::Seconds(config.checkpoint().timeout_seconds())),
        hybrid_(IsDeepModel(config.model().type()) &&
                config.model().mode() != ModelConfig::ASYNC),
        start_(absl::Now()),
        last_end_(start_),
        next_epoch_(MaxCheckpointEpoch(root_) + 1),
        metrics_(GetMetrics()) {
    auto creds = MakeChannelCredentials(SecurityOptionsFromJob(config));
    credentials_ =
        creds.ok() && *creds ? *creds : grpc::InsecureChannelCredentials();
  }

  void OnHeartbeat(const coord::HeartbeatRequest& req,
                   coord::HeartbeatResponse* resp) override {
    if (req.role() != coord::TRAINER) return;
    absl::MutexLock lock(&mu_);
    steps_[req.index()] = req.progress().steps();
    const double every = config_.checkpoint().every_seconds();
    if (round_ == nullptr && every > 0 &&
        absl::Now() - last_end_ >= absl::Seconds(every) &&
        finished_.size() < config_.cluster().num_trainers()) {
      NewRound(/*announced=*/true);
    }
    if (round_ != nullptr && round_->announced) {
      resp->set_checkpoint_epoch(round_->epoch);
      resp->set_checkpoint_at_step(round_->at_step);
    }
    if (round_ != nullptr && round_->state == Round::kWaiting) {
      resp->set_checkpoint_waiting_epoch(round_->epoch);
    }
  }

  Status Arrive(grpc::ServerContext* context,
                const coord::CheckpointArriveRequest& req,
                coord::CheckpointArriveResponse* resp) override {
    const int rank = req.position().rank();
    if (rank < 0 ||
        rank >= static_cast<int>(config_.cluster().num_trainers())) {
      return Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("CheckpointArrive: rank ", rank, " out of range"));
    }
    absl::MutexLock lock(&mu_);
    if (req.position().finished()) {
      finished_[rank] = req.position();
      // A copy: MaybeTake may end the round, which resets round_, and
      // unlocks mu_ while it snapshots.
      if (const std::shared_ptr<Round> round = round_; round != nullptr) {
        MaybeTake(round);
      }
      return Status::OK;
    }
    if (req.epoch() != 0 &&
        (round_ == nullptr || round_->epoch != req.epoch())) {
      resp->set_epoch(req.epoch());
      resp->set_reason("already abandoned");
      return Status::OK;
    }
    if (round_ == nullptr) NewRound(/*announced=*/false);
    std::shared_ptr<Round> round = round_;
    round->arrived[rank] = req.position();
    if (req.dense_saved()) {
      round->dense_file = DenseCheckpointFile(root_, req.position().steps());
    }
    if (req.missed()) {
      Abandon(round,
              absl::StrCat("trainer ", rank, " was at step ",
                           req.position().steps(), ", past the announced step ",
                           round->at_step));
    }
    MaybeTake(round);
    const absl::Time limit =
        std::min(round->start + timeout_ + absl::Seconds(1),
                 absl::FromChrono(context->deadline()));
    if (!WaitForCall(
            &round->ended_cv, &mu_, [&] { return round->ended(); }, limit,
            context) &&
        context->IsCancelled()) {
      // The trainer is gone or this coordinator is stopping: the round
      // goes on (or times out) without this call.
      return WaitFailed(context, absl::StrCat("checkpoint ", round->epoch,
                                              ": trainer ", rank, " arrived"));
    }
    if (!round->ended() && round->state == Round::kWaiting) {
      Abandon(round,
              absl::StrCat("only ", round->arrived.size() + Finished(*round),
                           " of ", config_.cluster().num_trainers(),
                           " trainers arrived within ",
                           absl::FormatDuration(timeout_)));
    }
    // A snapshot in progress ends within its own bounded RPCs.
    while (!round->ended()) round->ended_cv.Wait(&mu_);
    resp->set_epoch(round->epoch);
    resp->set_completed(round->state == Round::kCompleted);
    resp->set_reason(round->reason);
    return Status::OK;
  }

 private:
  void NewRound(bool announced) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    round_ = std::make_shared<Round>();
    round_->epoch = next_epoch_++;
    round_->announced = announced;
    round_->start = absl::Now();
    if (announced && hybrid_) {
      // Hybrid ranks step in lockstep; they must all pause at one step,
      // far enough ahead that none has passed it when it hears of it.
      uint64_t max_steps = 0;
      for (const auto& [rank, s] : steps_) max_steps = std::max(max_steps, s);
      const double rate =
          max_steps /
          std::max(1.0, absl::ToDoubleSeconds(absl::Now() - start_));
      round_->at_step = max_steps + std::max<uint64_t>(10, 3 * rate);
    }
    SAMPAN_LOG(INFO) << "checkpoint " << round_->epoch << " started"
                     << (announced ? " (time)" : " (steps)")
                     << (round_->at_step
                             ? absl::StrCat(" at step ", round_->at_step)
                             : "");
  }

  size_t Finished(const Round& round) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    size_t n = 0;
    for (const auto& [rank, p] : finished_) n += round.arrived.count(rank) == 0;
    return n;
  }

  // Takes the snapshot once every trainer is in. Runs in the caller's
  // handler, without the lock (the RPCs to the pservers take time).
  void MaybeTake(const std::shared_ptr<Round>& round)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (round->state != Round::kWaiting ||
        round->arrived.size() + Finished(*round) <
            config_.cluster().num_trainers()) {
      return;
    }
    if (hybrid_ && round->dense_file.empty()) {
      // Rank 0 saves the dense state only while it trains; a round that
      // every rank reached as finished would restore no dense weights.
      Abandon(round, "no dense state: every trainer had finished");
      return;
    }
    round->state = Round::kSnapshotting;
    coord::CheckpointManifest manifest;
    for (const auto& [rank, p] : finished_) *manifest.add_trainers() = p;
    for (const auto& [rank, p] : round->arrived) {
      if (finished_.count(rank) == 0) *manifest.add_trainers() = p;
    }
    std::sort(manifest.mutable_trainers()->begin(),
              manifest.mutable_trainers()->end(),
              [](const auto& a, const auto& b) { return a.rank() < b.rank(); });
    mu_.Unlock();
    const std::string error = Take(*round, &manifest);
    mu_.Lock();
    if (error.empty()) {
      round->state = Round::kCompleted;
      metrics_->completed->Increment();
      status_.set_completed(status_.completed() + 1);
      status_.set_last_epoch(round->epoch);
      status_.set_last_completed_unix_seconds(absl::ToUnixMillis(absl::Now()) /
                                              1e3);
      status_.set_last_seconds(
          absl::ToDoubleSeconds(absl::Now() - round->start));
      metrics_->duration->Observe(
          absl::ToDoubleSeconds(absl::Now() - round->start));
      SAMPAN_LOG(INFO) << "checkpoint " << round->epoch << " complete in "
                       << CheckpointDir(root_, round->epoch) << " ("
                       << absl::FormatDuration(absl::Now() - round->start)
                       << ")";
      End(round);
    } else {
      round->state = Round::kWaiting;
      Abandon(round, error);
    }
  }

  // Snapshots, dense state, manifest; returns an error message or "".
  std::string Take(const Round& round, coord::CheckpointManifest* manifest) {
    const std::string dir = CheckpointDir(root_, round.epoch);
    if (fence_.superseded()) return kSuperseded;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return absl::StrCat("cannot create ", dir, ": ", ec.message());
    // No shard moves from here to the manifest (coordinator/fleet.h).
    if (!fleet_.pause_moves(round.start + timeout_)) {
      return "a shard move outlasted the checkpoint timeout";
    }
    absl::Cleanup resume = [this] { fleet_.resume_moves(); };
    const ShardMap map = fleet_.map();
    if (std::string error = SnapshotAll(map, round, dir, manifest);
        !error.empty()) {
      return error;
    }
    manifest->mutable_shard_owner()->Add(map.owner.begin(), map.owner.end());
    manifest->set_num_pservers(map.num_pservers());
    if (fence_.superseded()) return kSuperseded;
    if (!round.dense_file.empty()) {
      fs::rename(round.dense_file, dir + "/dense.bin", ec);
      if (ec)
        return absl::StrCat("moving ", round.dense_file, ": ", ec.message());
      manifest->set_has_dense(true);
    }
    manifest->set_epoch(round.epoch);
    manifest->set_job_name(config_.name());
    manifest->set_created_unix_seconds(
        absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
    manifest->set_num_trainers(config_.cluster().num_trainers());
    // What a job warm-starting from this checkpoint checks its shape
    // against (trainer/warm_start.h).
    if (absl::Status s = WriteCheckpointConfig(dir, config_); !s.ok()) {
      return absl::StrCat("job config: ", s.message());
    }
    if (absl::Status s = WriteManifest(dir, manifest); !s.ok()) {
      return absl::StrCat("manifest: ", s.message());
    }
    PruneCheckpoints(root_, config_.checkpoint().keep());
    return "";
  }

  // Every pserver snapshots its own disk, so they go at once (up to
  // kParallelSnapshots calls in flight): the trainers wait for the slowest,
  // not for the sum (500 pservers of 0.2 s each took 100 s one after the
  // other: bench/fleet_sim.cc). Each pserver's files, as it digested them,
  // go into *manifest. Returns the first error, or "".
  std::string SnapshotAll(const ShardMap& map, const Round& round,
                          const std::string& dir,
                          coord::CheckpointManifest* manifest) {
    const size_t n = map.addresses.size();
    std::vector<std::string> errors(n);
    std::vector<std::vector<coord::ManifestFile>> files(n);
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next.fetch_add(1)) < n;) {
        errors[i] = SnapshotPserver(i, map.addresses[i], round, dir, &files[i]);
      }
    };
    std::vector<std::thread> threads;
    for (size_t t = 1; t < std::min(n, kParallelSnapshots); ++t) {
      threads.emplace_back(work);
    }
    work();
    for (std::thread& t : threads) t.join();
    for (const std::string& e : errors) {
      if (!e.empty()) return e;
    }
    for (std::vector<coord::ManifestFile>& list : files) {
      for (coord::ManifestFile& f : list) {
        *manifest->add_files() = std::move(f);
      }
    }
    return "";
  }

  // Retries while the pserver is unavailable (restarting), within the
  // round's timeout; each attempt has its own deadline. A pserver that
  // restarts registers again, perhaps on another port: each retry asks the
  // fleet for pserver i's address now, not the one the round began with.
  std::string SnapshotPserver(size_t i, std::string address, const Round& round,
                              const std::string& dir,
                              std::vector<coord::ManifestFile>* files) {
    if (address.empty()) return absl::StrCat("pserver ", i, " not registered");
    ps::CheckpointRequest req;
    req.set_epoch(round.epoch);
    // The pserver derives the same directory from its own config.
    const std::string snapshot = PserverCheckpointDir(root_, round.epoch, i);
    // One deadline for the whole snapshot phase, counted from the round's
    // start: trainers wait longer than that (timeout + 2 RPC deadlines from
    // their arrival), so none resumes pushing while a snapshot may still be
    // taken, which would put pushes past its recorded position into it.
    const absl::Time limit = round.start + timeout_;
    Backoff backoff(absl::Milliseconds(50), absl::Seconds(1),
                    limit - absl::Now());
    std::unique_ptr<ps::SparseTable::Stub> stub;
    std::string stub_address;
    while (true) {
      if (fence_.superseded()) return kSuperseded;
      if (stub == nullptr || stub_address != address) {
        stub = ps::SparseTable::NewStub(
            grpc::CreateChannel(address, credentials_));
        stub_address = address;
      }
      std::error_code ec;
      fs::remove_all(snapshot, ec);  // a failed attempt's partial copy
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(limit));
      ctx.AddMetadata(kCoordinatorEpochKey, absl::StrCat(fence_.epoch));
      ps::CheckpointResponse resp;
      const Status s = stub->Checkpoint(&ctx, req, &resp);
      if (s.ok()) {
        // Its files, relative to the checkpoint's directory.
        const std::string prefix = fs::relative(snapshot, dir).string();
        for (const ps::SnapshotFile& f : resp.files()) {
          coord::ManifestFile& m = files->emplace_back();
          m.set_path(absl::StrCat(prefix, "/", f.path()));
          m.set_size(f.size());
          m.set_crc32(f.crc32());
        }
        return "";
      }
      // Not run (unreached or refused): a restarting pserver. An attempt
      // that would start at the limit would only fail with its deadline,
      // hiding this cause.
      if (!IsRefusedOrUnreached(s.error_code()) || !backoff.Wait() ||
          absl::Now() >= limit) {
        return absl::StrCat("Checkpoint RPC to pserver ", i, " at ", address,
                            ": ", s.error_message());
      }
      const ShardMap now = fleet_.map();
      if (i < now.addresses.size() && !now.addresses[i].empty()) {
        address = now.addresses[i];
      }
    }
  }

  void Abandon(const std::shared_ptr<Round>& round, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (round->state != Round::kWaiting) return;
    round->state = Round::kAbandoned;
    round->reason = reason;
    metrics_->abandoned->Increment();
    status_.set_abandoned(status_.abandoned() + 1);
    status_.set_last_abandoned_reason(
        absl::StrCat("checkpoint ", round->epoch, ": ", reason));
    SAMPAN_LOG(WARNING) << "checkpoint " << round->epoch
                        << " abandoned: " << reason;
    // A replacement may be writing a checkpoint of the same number.
    if (fence_.superseded()) return End(round);
    std::error_code ec;
    fs::remove_all(CheckpointDir(root_, round->epoch), ec);
    if (!round->dense_file.empty()) fs::remove(round->dense_file, ec);
    End(round);
  }

  coord::CheckpointStatus Summary() const override {
    absl::MutexLock lock(&mu_);
    return status_;
  }

  void End(const std::shared_ptr<Round>& round)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const std::shared_ptr<Round> ended = round;  // `round` may be round_
    if (round_ == ended) round_ = nullptr;
    last_end_ = absl::Now();
    ended->ended_cv.SignalAll();
  }

  const JobConfig config_;
  const CheckpointFleet fleet_;
  const CheckpointFence fence_;
  const std::string root_;
  const absl::Duration timeout_;
  const bool hybrid_;
  const absl::Time start_;
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  mutable absl::Mutex mu_;
  absl::Time last_end_ ABSL_GUARDED_BY(mu_);
  coord::CheckpointStatus status_ ABSL_GUARDED_BY(mu_);
  uint64_t next_epoch_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Round> round_ ABSL_GUARDED_BY(mu_);
  std::map<int, uint64_t> steps_ ABSL_GUARDED_BY(mu_);
  std::map<int, coord::DataPosition> finished_ ABSL_GUARDED_BY(mu_);
  Metrics* const metrics_;
};

}  // namespace

std::unique_ptr<Checkpointer> Checkpointer::Create(const JobConfig& config,
                                                   CheckpointFleet fleet,
                                                   CheckpointFence fence) {
  return std::make_unique<CheckpointerImpl>(config, std::move(fleet),
                                            std::move(fence));
}

}  // namespace sampan
