#include "coordinator/coordinator.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/coordinator_epoch.h"
#include "common/file_digest.h"
#include "common/log.h"
#include "common/security.h"
#include "common/shard_map.h"
#include "coordinator/call_wait.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/checkpointer.h"
#include "coordinator/fleet.h"
#include "coordinator/id_source.h"
#include "sparse_table/job_options.h"

namespace sampan {
namespace {

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;

// The latest time a wait inside `context` may last: its deadline, capped so
// that a call without one cannot block a handler thread forever.
absl::Time WaitLimit(const ServerContext* context) {
  const absl::Time cap = absl::Now() + absl::Minutes(10);
  const auto deadline = context->deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return cap;
  return std::min(cap, absl::FromChrono(deadline));
}

// This incarnation's epoch: above every earlier one's, from the counter kept
// beside the state (from the clock alone when that cannot be written).
uint64_t TakeEpoch(const std::string& file) {
  absl::StatusOr<uint64_t> epoch = IdSource(file).Next();
  if (epoch.ok()) return *epoch;
  SAMPAN_LOG(ERROR) << "coordinator epoch: " << epoch.status().message()
                    << "; taking one from the clock";
  return *IdSource("").Next();
}

class CoordinatorImpl final : public CoordinatorService {
 public:
  CoordinatorImpl(const JobConfig& config, const std::string& launch_id)
      : config_(config),
        launch_id_(launch_id),
        state_file_(launch_id.empty() ? "" : StateFile(config, "state.pb")),
        start_(absl::Now()),
        writer_ids_(StateFile(config, "writer_ids")),
        epoch_(TakeEpoch(StateFile(config, "coordinator_epochs"))),
        checkpointer_(Checkpointer::Create(
            config,
            CheckpointFleet{[this] { return fleet_->Map(); },
                            [this](absl::Time deadline) {
                              return fleet_->PauseMoves(deadline);
                            },
                            [this] { fleet_->ResumeMoves(); }},
            CheckpointFence{epoch_, [this] { return superseded(); }})) {
    SAMPAN_LOG(INFO) << "coordinator epoch " << epoch_;
    LoadState();
  }

  uint64_t epoch() const override { return epoch_; }
  bool superseded() const override { return superseded_.load(); }
  bool CheckSuperseded() override {
    if (state_file_.empty() || superseded()) return superseded();
    if (const uint64_t newer = EpochOfStateOnDisk(); newer > epoch_) {
      Supersede(absl::StrCat(state_file_, " was written by coordinator epoch ",
                             newer));
    }
    return superseded();
  }

  Status Register(ServerContext* context, const coord::RegisterRequest* req,
                  coord::RegisterResponse* resp) override {
    if (Status s = Fence(context, "Register"); !s.ok()) return s;
    const int limit = req->role() == coord::PSERVER
                          ? static_cast<int>(fleet_->size())
                          : config_.cluster().num_trainers();
    if (req->role() == coord::ROLE_UNSPECIFIED || req->index() < 0 ||
        req->index() >= limit) {
      return Status(
          StatusCode::INVALID_ARGUMENT,
          absl::StrCat("Register: index ", req->index(), " out of range [0, ",
                       limit, ") for role ", coord::Role_Name(req->role())));
    }
    uint64_t writer_id = 0;
    if (req->role() == coord::TRAINER) {
      // Reserved before the slot changes: a failure leaves nothing half done.
      absl::StatusOr<uint64_t> id = writer_ids_.Next();
      if (!id.ok()) {
        SAMPAN_LOG(ERROR) << "Register: trainer " << req->index() << ": "
                          << id.status().message();
        return Status(StatusCode::UNAVAILABLE,
                      absl::StrCat("Register: ", id.status().message()));
      }
      writer_id = *id;
    }
    if (req->role() == coord::PSERVER) {
      // Its address into the shard map, and what it owns into the answer.
      absl::StatusOr<coord::ShardAssignment> assignment =
          fleet_->Register(req->index(), req->address());
      if (!assignment.ok()) {
        SAMPAN_LOG(ERROR) << "Register: pserver " << req->index() << ": "
                          << assignment.status().message();
        return Status(
            absl::IsInvalidArgument(assignment.status())
                ? StatusCode::INVALID_ARGUMENT
                : StatusCode::UNAVAILABLE,
            absl::StrCat("Register: ", assignment.status().message()));
      }
      *resp->mutable_assignment() = *assignment;
    }
    absl::MutexLock lock(&mu_);
    resp->set_writer_id(writer_id);
    Slot& slot = members_[{req->role(), req->index()}];
    slot.member.set_role(req->role());
    slot.member.set_index(req->index());
    slot.member.set_address(req->address());
    slot.member.set_incarnation(slot.member.incarnation() + 1);
    slot.last_heartbeat = absl::Now();
    resp->set_incarnation(slot.member.incarnation());
    SAMPAN_LOG(INFO) << "registered " << coord::Role_Name(req->role()) << " "
                     << req->index() << " at '" << req->address()
                     << "' incarnation " << slot.member.incarnation()
                     << (writer_id != 0
                             ? absl::StrCat(" writer ", writer_id)
                             : absl::StrCat(
                                   " shard map version ",
                                   resp->assignment().shard_map_version()));
    return Status::OK;
  }

  Status Heartbeat(ServerContext* context, const coord::HeartbeatRequest* req,
                   coord::HeartbeatResponse* resp) override {
    if (Status s = Fence(context, "Heartbeat"); !s.ok()) return s;
    {
      absl::MutexLock lock(&mu_);
      auto it = members_.find({req->role(), req->index()});
      if (it == members_.end()) {
        return Status(StatusCode::NOT_FOUND,
                      absl::StrCat("Heartbeat: ", coord::Role_Name(req->role()),
                                   " ", req->index(), " is not registered"));
      }
      it->second.last_heartbeat = absl::Now();
      if (req->has_progress()) it->second.progress = req->progress();
      if (req->has_load()) it->second.load = req->load();
    }
    checkpointer_->OnHeartbeat(*req, resp);
    return Status::OK;
  }

  Status CheckpointArrive(ServerContext* context,
                          const coord::CheckpointArriveRequest* req,
                          coord::CheckpointArriveResponse* resp) override {
    if (Status s = Fence(context, "CheckpointArrive"); !s.ok()) return s;
    return checkpointer_->Arrive(context, *req, resp);
  }

  Status GetClusterSpec(ServerContext* context,
                        const coord::GetClusterSpecRequest* req,
                        coord::ClusterSpec* spec) override {
    if (Status s = Fence(context, "GetClusterSpec"); !s.ok()) return s;
    const uint32_t size = fleet_->size();
    {
      absl::MutexLock lock(&mu_);
      auto complete = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return CountPservers(size) == size;
      };
      if (req->wait_complete() &&
          !AwaitForCall(&mu_, absl::Condition(&complete), WaitLimit(context),
                        context)) {
        return WaitFailed(
            context, absl::StrCat("GetClusterSpec: only ", CountPservers(size),
                                  " of ", size, " pservers registered"));
      }
    }
    // Read after the wait: the map of the pservers it waited for.
    const ShardMap map = fleet_->Map();
    absl::MutexLock lock(&mu_);
    FillSpec(map, spec);
    return Status::OK;
  }

  Status Barrier(ServerContext* context, const coord::BarrierRequest* req,
                 coord::BarrierResponse*) override {
    if (Status s = Fence(context, "Barrier"); !s.ok()) return s;
    if (req->count() <= 0) {
      return Status(StatusCode::INVALID_ARGUMENT,
                    "Barrier: count must be positive");
    }
    absl::MutexLock lock(&mu_);
    BarrierState& b = barriers_[req->name()];
    b.arrived.insert(req->index());
    if (!b.released && static_cast<int>(b.arrived.size()) >= req->count()) {
      b.released = true;
      // Kept before anyone leaves: an arrival retried after a restart of
      // this coordinator must find the barrier released, not wait for
      // members that passed it long ago.
      if (absl::Status s = SaveState(); !s.ok()) {
        SAMPAN_LOG(ERROR) << "Barrier '" << req->name() << "': " << s.message();
      }
    }
    if (!AwaitForCall(&mu_, absl::Condition(&b.released), WaitLimit(context),
                      context)) {
      return WaitFailed(context, absl::StrCat("Barrier '", req->name(),
                                              "': ", b.arrived.size(), " of ",
                                              req->count(), " arrived"));
    }
    return Status::OK;
  }

  Status KvPut(ServerContext* context, const coord::KvPutRequest* req,
               coord::KvPutResponse*) override {
    if (Status s = Fence(context, "KvPut"); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    kv_[req->key()] = req->value();
    if (absl::Status s = SaveState(); !s.ok()) {
      kv_.erase(req->key());  // not acknowledged: the caller retries
      return Status(StatusCode::UNAVAILABLE,
                    absl::StrCat("KvPut '", req->key(), "': ", s.message()));
    }
    return Status::OK;
  }

  Status KvGet(ServerContext* context, const coord::KvGetRequest* req,
               coord::KvGetResponse* resp) override {
    if (Status s = Fence(context, "KvGet"); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    auto present = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return kv_.count(req->key()) > 0;
    };
    if (req->wait() && !AwaitForCall(&mu_, absl::Condition(&present),
                                     WaitLimit(context), context)) {
      return WaitFailed(context,
                        absl::StrCat("KvGet: key '", req->key(), "' not set"));
    }
    auto it = kv_.find(req->key());
    resp->set_found(it != kv_.end());
    if (it != kv_.end()) resp->set_value(it->second);
    return Status::OK;
  }

  Status JobStatus(ServerContext* context, const coord::JobStatusRequest*,
                   coord::JobStatusResponse* resp) override {
    if (Status s = Fence(context, "JobStatus"); !s.ok()) return s;
    const ShardMap map = fleet_->Map();
    *resp->mutable_fleet() = fleet_->Status();
    // Not under mu_: the checkpointer has a lock of its own.
    *resp->mutable_checkpoints() = checkpointer_->Summary();
    absl::MutexLock lock(&mu_);
    resp->set_coordinator_incarnations(incarnations_);
    resp->set_coordinator_epoch(epoch_);
    FillSpec(map, resp->mutable_spec());
    for (int r = 0; r < int(config_.cluster().num_trainers()); ++r) {
      auto it = members_.find({coord::TRAINER, r});
      *resp->add_trainers() =
          it == members_.end() ? coord::TrainerProgress() : it->second.progress;
    }
    for (const coord::Member& m : resp->spec().pservers()) {
      coord::PserverLoad* load = resp->add_pserver_loads();
      auto it = members_.find({coord::PSERVER, m.index()});
      if (it != members_.end()) *load = it->second.load;
      load->set_index(m.index());
    }
    resp->set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start_));
    return Status::OK;
  }

  Status Scale(ServerContext* context, const coord::ScaleRequest* req,
               coord::ScaleResponse* resp) override {
    if (Status s = Fence(context, "Scale"); !s.ok()) return s;
    return fleet_->Scale(*req, resp);
  }

 private:
  struct Slot {
    coord::Member member;
    absl::Time last_heartbeat;
    coord::TrainerProgress progress;
    coord::PserverLoad load;  // pservers
  };
  struct BarrierState {
    std::set<int> arrived;
    bool released = false;
  };
  using Key = std::pair<int, int>;  // (role, index)

  // Every handler starts here: tells the caller this coordinator's epoch,
  // and refuses (UNAVAILABLE: the caller retries, and finds the newer
  // coordinator) once a newer one is known to have taken over.
  Status Fence(ServerContext* context, absl::string_view rpc) {
    context->AddInitialMetadata(kCoordinatorEpochKey, absl::StrCat(epoch_));
    const uint64_t theirs = CoordinatorEpochIn(context->client_metadata());
    if (theirs > epoch_) {
      Supersede(absl::StrCat("a member called ", rpc,
                             " having seen coordinator epoch ", theirs));
    }
    if (!superseded()) return Status::OK;
    return Status(StatusCode::UNAVAILABLE,
                  absl::StrCat(rpc, ": coordinator epoch ", epoch_,
                               " was replaced by a newer coordinator"));
  }

  void Supersede(const std::string& why) {
    if (!superseded_.exchange(true)) {
      SAMPAN_LOG(ERROR) << "coordinator epoch " << epoch_
                        << " superseded: " << why
                        << "; it acts no more and stops";
    }
  }

  // Writes the rendezvous state durably (a no-op without a launch id).
  absl::Status SaveState() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (state_file_.empty()) return absl::OkStatus();
    // A newer coordinator's state is not overwritten. (Between this check
    // and the rename below a newer one could still write; it would have to
    // start within that window, and it writes its state again on its next
    // put or barrier.)
    if (CheckSuperseded()) {
      return absl::UnavailableError(absl::StrCat("coordinator epoch ", epoch_,
                                                 " was replaced; not writing ",
                                                 state_file_));
    }
    coord::CoordinatorState state;
    state.set_launch_id(launch_id_);
    state.set_coordinator_epoch(epoch_);
    state.set_incarnations(incarnations_);
    for (const auto& [key, value] : kv_) (*state.mutable_kv())[key] = value;
    for (const auto& [name, b] : barriers_) {
      if (b.released) state.add_released_barriers(name);
    }
    *state.mutable_fleet() = fleet_state_;
    std::error_code ec;
    std::filesystem::create_directories(
        std::filesystem::path(state_file_).parent_path(), ec);
    return WriteFileDurably(state_file_, state.SerializeAsString());
  }

  uint64_t EpochOfStateOnDisk() const {
    std::ifstream in(state_file_, std::ios::binary);
    coord::CoordinatorState state;
    if (!in.is_open() || !state.ParseFromIstream(&in)) return 0;
    return state.coordinator_epoch();
  }

  // Resumes the rendezvous state of this launch, if a coordinator before
  // this one kept any, and writes it back as this epoch's (so that an
  // earlier coordinator that wakes up finds it and stops).
  // Then starts the fleet (from the kept one, if any).
  void LoadState() {
    if (!state_file_.empty()) ResumeState();
    FleetOptions o;
    o.num_shards = config_.table().num_shards();
    o.size = config_.cluster().num_pservers();
    o.num_tables = HasDenseTable(config_) ? 2 : 1;
    o.versions_file = StateFile(config_, "shard_map_versions");
    o.rpc_deadline = absl::Seconds(config_.cluster().rpc_deadline_seconds());
    auto creds = MakeChannelCredentials(SecurityOptionsFromJob(config_));
    if (creds.ok()) o.credentials = *creds;
    o.coordinator_epoch = epoch_;
    o.superseded = [this] { return superseded(); };
    o.save = [this](const coord::FleetState& next) {
      absl::MutexLock lock(&mu_);
      const coord::FleetState was = fleet_state_;
      fleet_state_ = next;
      absl::Status s = SaveState();
      if (!s.ok()) fleet_state_ = was;
      return s;
    };
    coord::FleetState resumed;
    {
      absl::MutexLock lock(&mu_);
      resumed = fleet_state_;
    }
    fleet_ = Fleet::Create(std::move(o), resumed);
    absl::MutexLock lock(&mu_);
    fleet_state_ = fleet_->State();
    if (state_file_.empty()) return;
    if (absl::Status s = SaveState(); !s.ok()) {
      SAMPAN_LOG(ERROR) << "coordinator state: " << s.message();
    }
  }

  void ResumeState() {
    std::ifstream in(state_file_, std::ios::binary);
    const bool exists = in.is_open();  // parsing leaves `in` at EOF
    coord::CoordinatorState state;
    if (exists && !state.ParseFromIstream(&in)) {
      SAMPAN_LOG(ERROR) << state_file_
                        << ": not a CoordinatorState; starting empty";
      return;
    }
    if (!exists ||
        state.launch_id() != launch_id_) {  // none, or another launch's
      SAMPAN_LOG(INFO) << "launch " << launch_id_ << ": no state kept yet in "
                       << state_file_;
      return;
    }
    absl::MutexLock lock(&mu_);
    incarnations_ = state.incarnations() + 1;
    for (const auto& [key, value] : state.kv()) kv_[key] = value;
    for (const std::string& name : state.released_barriers()) {
      barriers_[name].released = true;
    }
    fleet_state_ = state.fleet();
    SAMPAN_LOG(INFO) << "launch " << launch_id_ << ": coordinator incarnation "
                     << incarnations_ << " resumed " << kv_.size()
                     << " keys and " << state.released_barriers_size()
                     << " released barriers from " << state_file_;
  }

  // Registered pservers of a fleet of `size` (those that left it may
  // still be registered until they stop).
  uint32_t CountPservers(uint32_t size) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    uint32_t n = 0;
    for (const auto& [key, slot] : members_) {
      n += key.first == coord::PSERVER && key.second < static_cast<int>(size);
    }
    return n;
  }

  void FillSpec(const ShardMap& map, coord::ClusterSpec* spec) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    spec->set_num_pservers(map.num_pservers());
    spec->set_num_trainers(config_.cluster().num_trainers());
    const absl::Time now = absl::Now();
    for (const auto& [key, slot] : members_) {  // ordered by (role, index)
      if (key.first == coord::PSERVER && key.second >= spec->num_pservers()) {
        continue;  // left the fleet
      }
      coord::Member* m = key.first == coord::PSERVER ? spec->add_pservers()
                                                     : spec->add_trainers();
      *m = slot.member;
      const double age = absl::ToDoubleSeconds(now - slot.last_heartbeat);
      m->set_heartbeat_age_seconds(age);
      m->set_alive(age < config_.cluster().heartbeat_timeout_seconds());
    }
    spec->set_complete(spec->pservers_size() == spec->num_pservers());
    coord::ShardMap* out = spec->mutable_shard_map();
    out->set_version(map.version);
    out->mutable_owner()->Add(map.owner.begin(), map.owner.end());
    for (const std::string& a : map.addresses) out->add_address(a);
  }

 public:
  // Beside the checkpoints: on Kubernetes that is the job's shared volume,
  // which outlives the coordinator's pod. A config with neither (tests'
  // in-process coordinators) keeps no file.
  static std::string StateFile(const JobConfig& config, const char* name) {
    if (config.output_dir().empty() && config.checkpoint().dir().empty()) {
      return "";
    }
    return absl::StrCat(CheckpointRoot(config), "/coordinator/", name);
  }

 private:
  const JobConfig config_;
  const std::string launch_id_;
  const std::string state_file_;  // "" without a launch id
  const absl::Time start_;
  absl::Mutex mu_;
  std::map<Key, Slot> members_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, BarrierState> barriers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> kv_ ABSL_GUARDED_BY(mu_);
  // The fleet's state as last saved (Fleet's save callback).
  coord::FleetState fleet_state_ ABSL_GUARDED_BY(mu_);
  IdSource writer_ids_;  // has its own lock
  const uint64_t epoch_;
  std::atomic<bool> superseded_{false};
  uint32_t incarnations_ ABSL_GUARDED_BY(mu_) = 1;
  // Its callbacks read fleet_.
  std::unique_ptr<Checkpointer> checkpointer_;
  // The shard map, its pservers' addresses and the moves that rescale the
  // fleet. Created by LoadState; destroyed first (its thread saves state
  // under mu_). Never called with mu_ held (lock order: the fleet's mutex
  // before mu_).
  std::unique_ptr<Fleet> fleet_;
};

}  // namespace

std::unique_ptr<CoordinatorService> NewCoordinatorService(
    const JobConfig& config, const std::string& launch_id) {
  return std::make_unique<CoordinatorImpl>(config, launch_id);
}

absl::Status SeedCoordinatorState(const JobConfig& config,
                                  const std::string& launch_id,
                                  const coord::FleetState& fleet) {
  const std::string file = CoordinatorImpl::StateFile(config, "state.pb");
  if (file.empty()) {
    return absl::FailedPreconditionError(
        "a rescaled fleet needs output_dir or checkpoint.dir for the "
        "coordinator's state");
  }
  coord::CoordinatorState state;
  state.set_launch_id(launch_id);
  *state.mutable_fleet() = fleet;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(),
                                      ec);
  return WriteFileDurably(file, state.SerializeAsString());
}

}  // namespace sampan
