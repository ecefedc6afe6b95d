#include "coordinator/fleet.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/coordinator_epoch.h"
#include "common/log.h"
#include "coordinator/fleet_plan.h"
#include "coordinator/id_source.h"
#include "proto/ps.grpc.pb.h"
#include "pserver/shard_copy.h"

namespace sampan {
namespace {

using grpc::StatusCode;

std::string Describe(const coord::ShardMove& m) {
  return absl::StrCat("shard ", m.shard(), ": pserver ", m.from(), " -> ",
                      m.to());
}

coord::ShardMove MoveOf(uint32_t shard, uint32_t from, uint32_t to) {
  coord::ShardMove m;
  m.set_shard(shard);
  m.set_from(from);
  m.set_to(to);
  return m;
}

std::vector<uint32_t> Owners(const coord::FleetState& state) {
  return {state.owner().begin(), state.owner().end()};
}

class FleetImpl final : public Fleet {
 public:
  FleetImpl(FleetOptions options, const coord::FleetState& resumed)
      : options_(std::move(options)), versions_(options_.versions_file) {
    if (!options_.credentials) {
      options_.credentials = grpc::InsecureChannelCredentials();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (resumed.owner_size() == static_cast<int>(options_.num_shards) &&
        resumed.size() >= 1) {
      state_ = resumed;
      if (state_.has_moving()) {
        // The source still owns it (the flip is saved before anyone hears
        // of it); the target may hold a partial copy.
        SAMPAN_LOG(WARNING)
            << "fleet: abandoning the move of " << Describe(state_.moving())
            << " a previous coordinator left unfinished";
        *state_.add_drops() =
            MoveOf(state_.moving().shard(), state_.moving().to(), 0);
        state_.clear_moving();
      }
      SAMPAN_LOG(INFO) << "fleet: resumed " << state_.size()
                       << " pservers (wanted " << state_.wanted() << "), "
                       << state_.drops_size() << " copies to drop";
    } else {
      state_.set_size(options_.size);
      state_.set_wanted(options_.size);
      if (options_.size > 0) {  // the job's first map
        const ShardMap first = InitialShardMap(
            options_.num_shards, std::vector<std::string>(options_.size));
        state_.mutable_owner()->Add(first.owner.begin(), first.owner.end());
      }
    }
    map_.version = 1;  // above 0; every Register moves it past the old ones
    map_.owner = Owners(state_);
    map_.addresses.assign(state_.size(), "");
    mover_ = std::thread([this] { Run(); });
  }

  ~FleetImpl() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    mover_.join();
  }

  absl::StatusOr<coord::ShardAssignment> Register(
      uint32_t index, const std::string& address) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (index >= state_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pserver ", index, " is not in the fleet of ",
                       state_.size(), " pservers"));
    }
    if (map_.addresses[index] != address) {
      // Above every version handed out, this coordinator's or an earlier
      // one's: clients adopt only newer maps.
      absl::StatusOr<uint64_t> version = versions_.Next();
      if (!version.ok())
        return absl::UnavailableError(version.status().message());
      map_.addresses[index] = address;
      map_.version = *version;
    }
    owed_.erase(index);  // the answer carries it
    return AssignmentLocked(index);
  }

  ShardMap Map() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return map_;
  }

  uint32_t size() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return state_.size();
  }

  coord::FleetState State() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return state_;
  }

  bool PauseMoves(absl::Time deadline) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++pauses_;
    if (cv_.wait_until(lock, absl::ToChronoTime(deadline),
                       [this] { return !stepping_; })) {
      return true;
    }
    --pauses_;
    return false;
  }

  void ResumeMoves() override {
    std::lock_guard<std::mutex> lock(mu_);
    --pauses_;
  }

  grpc::Status Scale(const coord::ScaleRequest& req,
                     coord::ScaleResponse* resp) override {
    const uint32_t n = req.num_pservers();
    if (n < 1 || n > options_.num_shards) {
      return grpc::Status(
          StatusCode::INVALID_ARGUMENT,
          absl::StrCat("Scale: num_pservers must be in [1, ",
                       options_.num_shards, "] (table.num_shards), got ", n));
    }
    std::lock_guard<std::mutex> lock(mu_);
    resp->set_from_pservers(state_.size());
    const size_t left = PlanMoves(Owners(state_), state_.wanted()).size();
    if (n == state_.wanted()) {  // nothing new (or a retried call)
      resp->set_shards_to_move(left);
      return grpc::Status::OK;
    }
    if (state_.wanted() != state_.size() || left > 0) {
      return grpc::Status(
          StatusCode::FAILED_PRECONDITION,
          absl::StrCat("Scale: a rescale to ", state_.wanted(),
                       " pservers is under way (", left,
                       " shards left to move); ask again once `sampan "
                       "status` shows the fleet at ",
                       state_.wanted()));
    }
    coord::FleetState next = state_;
    next.set_wanted(n);
    next.set_size(std::max(state_.size(), n));
    if (absl::Status s = CommitLocked(next); !s.ok()) {
      return grpc::Status(StatusCode::UNAVAILABLE,
                          absl::StrCat("Scale: ", s.message()));
    }
    resp->set_shards_to_move(PlanMoves(Owners(state_), n).size());
    SAMPAN_LOG(INFO) << "fleet: rescale " << resp->from_pservers() << " -> "
                     << n << " pservers, " << resp->shards_to_move()
                     << " shards to move (map version " << map_.version << ")";
    retry_at_ = absl::InfinitePast();
    return grpc::Status::OK;
  }

  coord::FleetStatus Status() const override {
    std::lock_guard<std::mutex> lock(mu_);
    coord::FleetStatus s;
    s.set_size(state_.size());
    s.set_wanted(state_.wanted());
    s.set_shards_to_move(PlanMoves(Owners(state_), state_.wanted()).size());
    s.set_shards_moved(shards_moved_);
    s.set_rows_moved(rows_moved_);
    if (state_.has_moving()) s.set_moving(Describe(state_.moving()));
    s.set_last_error(last_error_);
    return s;
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    bool busy = false;
    while (!stop_) {
      // Moves follow each other at once; otherwise a look every 100 ms.
      if (!busy) {
        cv_.wait_for(lock, std::chrono::milliseconds(100),
                     [this] { return stop_; });
      }
      if (stop_) break;
      lock.unlock();
      busy = Step();
      lock.lock();
    }
  }

  // One round of the mover: owed assignments, owed drops, then the next
  // move or the shrink that ends a rescale. True when a move succeeded.
  bool Step() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pauses_ > 0) return false;  // a checkpoint snapshots
      stepping_ = true;
    }
    const bool moved = StepUnpaused();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stepping_ = false;
    }
    cv_.notify_all();  // a checkpoint may wait for it
    return moved;
  }

  bool StepUnpaused() {
    if (options_.superseded()) return false;
    SendOwed();
    if (!DropCopies()) return false;  // a pserver is down: wait for it
    std::optional<coord::ShardMove> move;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (absl::Now() < retry_at_) return false;
      std::vector<PlannedMove> plan =
          PlanMoves(Owners(state_), state_.wanted());
      if (plan.empty()) {
        if (state_.size() > state_.wanted()) ShrinkLocked();
        return false;
      }
      const PlannedMove& p = plan.front();
      // Both ends must be serving (a new pserver registers first).
      if (map_.addresses[p.from].empty() || map_.addresses[p.to].empty()) {
        return false;
      }
      move = MoveOf(p.shard, p.from, p.to);
    }
    const absl::Status s = Move(*move);
    std::lock_guard<std::mutex> lock(mu_);
    if (s.ok()) {
      backoff_ = options_.retry_backoff;
      last_error_.clear();
      return true;
    }
    last_error_ = absl::StrCat(Describe(*move), ": ", s.message());
    SAMPAN_LOG(WARNING) << "fleet: move of " << last_error_
                        << "; abandoned, retried in "
                        << absl::FormatDuration(backoff_);
    retry_at_ = absl::Now() + backoff_;
    backoff_ = std::min(backoff_ * 2, options_.retry_backoff * 8);
    return false;
  }

  absl::Status Move(const coord::ShardMove& m) {
    const absl::Time start = absl::Now();
    {
      std::lock_guard<std::mutex> lock(mu_);
      coord::FleetState next = state_;
      *next.mutable_moving() = m;
      if (absl::Status s = CommitLocked(next); !s.ok()) return s;
      SAMPAN_LOG(INFO) << "fleet: moving " << Describe(m) << " (map version "
                       << map_.version << ")";
    }
    // Frozen at the source: its pushes wait (refused, retried) from here.
    if (absl::Status s = SendAssignment(m.from()); !s.ok()) {
      return Abandon(m, s);
    }
    uint64_t rows = 0;
    for (uint32_t t = 0; t < options_.num_tables; ++t) {
      ShardCopyRequest copy;
      copy.table_id = t;
      copy.shard = m.shard();
      copy.deadline = absl::Now() + options_.copy_deadline;
      copy.metadata_key = kCoordinatorEpochKey;
      copy.metadata_value = absl::StrCat(options_.coordinator_epoch);
      std::unique_ptr<ps::SparseTable::Stub> from, to;
      {
        std::lock_guard<std::mutex> lock(mu_);
        copy.shard_map_version = map_.version;
        from = Stub(map_.addresses[m.from()]);
        to = Stub(map_.addresses[m.to()]);
      }
      absl::StatusOr<uint64_t> copied = CopyShard(*from, *to, copy);
      if (!copied.ok()) return Abandon(m, copied.status());
      rows += *copied;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (options_.superseded()) {
        return absl::UnavailableError("superseded before the flip");
      }
      coord::FleetState next = state_;
      next.set_owner(m.shard(), m.to());
      next.clear_moving();
      *next.add_drops() = MoveOf(m.shard(), m.from(), m.to());
      // Not saved: the move is abandoned; the source still owns the shard.
      if (absl::Status s = CommitLocked(next); !s.ok()) return Abandon(m, s);
      ++shards_moved_;
      rows_moved_ += rows;
    }
    // A pserver that misses its SetShards gets it again (owed), or with its
    // Register answer when it restarts.
    SendAssignment(m.to()).IgnoreError();
    SendAssignment(m.from()).IgnoreError();
    SAMPAN_LOG(INFO) << "fleet: moved " << Describe(m) << ", " << rows
                     << " rows in "
                     << absl::FormatDuration(absl::Trunc(
                            absl::Now() - start, absl::Milliseconds(1)));
    DropCopies();
    return absl::OkStatus();
  }

  // Undoes a move that did not flip: the source owns the shard again,
  // unfrozen, and the target's copy is dropped. Returns `why`.
  absl::Status Abandon(const coord::ShardMove& m, absl::Status why) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      coord::FleetState next = state_;
      next.clear_moving();
      *next.add_drops() = MoveOf(m.shard(), m.to(), m.from());
      if (absl::Status s = CommitLocked(next); !s.ok()) {
        // Left as it was: the next coordinator abandons it from the state.
        SAMPAN_LOG(ERROR) << "fleet: abandoning " << Describe(m) << ": "
                          << s.message();
        return why;
      }
    }
    SendAssignment(m.from()).IgnoreError();
    DropCopies();
    return why;
  }

  // The fleet's last move is done: pservers at `wanted` and above own
  // nothing and leave it.
  void ShrinkLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const coord::ShardMove& d : state_.drops()) {
      if (d.from() >= state_.wanted()) return;  // its drop first
    }
    coord::FleetState next = state_;
    next.set_size(state_.wanted());
    const uint32_t was = state_.size();
    if (absl::Status s = CommitLocked(next); !s.ok()) {
      last_error_ = absl::StrCat("shrinking the fleet: ", s.message());
      return;
    }
    for (auto it = owed_.begin(); it != owed_.end();) {
      it = *it >= state_.size() ? owed_.erase(it) : std::next(it);
    }
    SAMPAN_LOG(INFO) << "fleet: " << was << " -> " << state_.size()
                     << " pservers; pservers " << state_.size() << ".."
                     << was - 1 << " own nothing and may stop (map version "
                     << map_.version << ")";
  }

  // Takes a version, saves `next` and makes it the state.
  absl::Status CommitLocked(const coord::FleetState& next)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (options_.superseded()) {
      return absl::UnavailableError("this coordinator was superseded");
    }
    absl::StatusOr<uint64_t> version = versions_.Next();
    if (!version.ok()) return version.status();
    if (absl::Status s = options_.save(next); !s.ok()) return s;
    state_ = next;
    map_.version = *version;
    map_.owner = Owners(state_);
    map_.addresses.resize(state_.size());
    return absl::OkStatus();
  }

  coord::ShardAssignment AssignmentLocked(uint32_t index) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    coord::ShardAssignment a;
    a.set_shard_map_version(map_.version);
    for (uint32_t s = 0; s < map_.owner.size(); ++s) {
      if (map_.owner[s] == index) a.add_owned_shards(s);
    }
    if (state_.has_moving() && state_.moving().from() == index) {
      a.add_frozen_shards(state_.moving().shard());
    }
    return a;
  }

  // SetShards with pserver `index`'s current assignment; owed on failure.
  absl::Status SendAssignment(uint32_t index) {
    ps::SetShardsRequest req;
    std::string address;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (index >= state_.size()) return absl::OkStatus();
      const coord::ShardAssignment a = AssignmentLocked(index);
      req.set_shard_map_version(a.shard_map_version());
      *req.mutable_owned_shards() = a.owned_shards();
      *req.mutable_frozen_shards() = a.frozen_shards();
      address = map_.addresses[index];
    }
    grpc::Status s(StatusCode::UNAVAILABLE, "not registered");
    if (!address.empty()) {
      grpc::ClientContext ctx;
      Prepare(&ctx);
      ps::SetShardsResponse resp;
      s = Stub(address)->SetShards(&ctx, req, &resp);
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (s.ok()) {
      owed_.erase(index);
      return absl::OkStatus();
    }
    owed_.insert(index);
    return absl::UnavailableError(
        absl::StrCat("SetShards to pserver ", index, " (map version ",
                     req.shard_map_version(), "): ", s.error_message()));
  }

  void SendOwed() {
    std::set<uint32_t> owed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      owed = owed_;
    }
    for (uint32_t p : owed) SendAssignment(p).IgnoreError();
  }

  // Deletes the copies owed; true when none is left.
  bool DropCopies() {
    std::vector<coord::ShardMove> drops;
    {
      std::lock_guard<std::mutex> lock(mu_);
      drops.assign(state_.drops().begin(), state_.drops().end());
    }
    for (const coord::ShardMove& d : drops) {
      std::string address;
      uint64_t version;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (d.from() < state_.size()) address = map_.addresses[d.from()];
        version = map_.version;
      }
      bool done = d.from() >= size();  // left the fleet: nothing to serve
      if (!address.empty()) {
        done = true;
        for (uint32_t t = 0; t < options_.num_tables && done; ++t) {
          ps::DropShardRequest req;
          req.set_table_id(t);
          req.set_shard(d.shard());
          req.set_shard_map_version(version);
          grpc::ClientContext ctx;
          // Table work, as long as a copy on a big table: the RPC deadline
          // would cut it short and retry it from the start.
          Prepare(&ctx, options_.copy_deadline);
          ps::DropShardResponse resp;
          const grpc::Status s = Stub(address)->DropShard(&ctx, req, &resp);
          done = s.ok();
          // Retried every 100 ms while the pserver is away: logged once a
          // second.
          if (!s.ok() && absl::Now() - last_drop_warning_ > absl::Seconds(1)) {
            last_drop_warning_ = absl::Now();
            SAMPAN_LOG(WARNING) << "fleet: DropShard shard " << d.shard()
                                << " table " << t << " at pserver " << d.from()
                                << ": " << s.error_message() << " (retried)";
          }
        }
      }
      if (!done) continue;
      std::lock_guard<std::mutex> lock(mu_);
      coord::FleetState next = state_;
      auto* list = next.mutable_drops();
      for (int i = 0; i < list->size(); ++i) {
        if (list->Get(i).shard() == d.shard() &&
            list->Get(i).from() == d.from()) {
          list->erase(list->begin() + i);
          break;
        }
      }
      if (!CommitLocked(next).ok()) return false;
    }
    std::lock_guard<std::mutex> lock(mu_);
    return state_.drops_size() == 0;
  }

  void Prepare(grpc::ClientContext* ctx,
               absl::Duration deadline = absl::ZeroDuration()) const {
    if (deadline == absl::ZeroDuration()) deadline = options_.rpc_deadline;
    ctx->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    ctx->AddMetadata(kCoordinatorEpochKey,
                     absl::StrCat(options_.coordinator_epoch));
  }

  std::unique_ptr<ps::SparseTable::Stub> Stub(
      const std::string& address) const {
    return ps::SparseTable::NewStub(
        grpc::CreateChannel(address, options_.credentials));
  }

  FleetOptions options_;
  IdSource versions_;
  // std::mutex rather than absl::Mutex, so that ThreadSanitizer sees it
  // (Debian's Abseil is not built for it). cv_: stop_ or stepping_ changed.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  coord::FleetState state_ ABSL_GUARDED_BY(mu_);
  ShardMap map_ ABSL_GUARDED_BY(mu_);  // owners from state_, addresses
  std::set<uint32_t> owed_ ABSL_GUARDED_BY(mu_);  // SetShards to resend
  absl::Time retry_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Duration backoff_ ABSL_GUARDED_BY(mu_) = options_.retry_backoff;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  uint64_t shards_moved_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t rows_moved_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // PauseMoves calls not resumed yet; no step starts while there is one.
  int pauses_ ABSL_GUARDED_BY(mu_) = 0;
  bool stepping_ ABSL_GUARDED_BY(mu_) = false;  // a step (move, drops) runs
  absl::Time last_drop_warning_ = absl::InfinitePast();  // mover thread only
  std::thread mover_;  // last: it reads everything above
};

}  // namespace

std::unique_ptr<Fleet> Fleet::Create(FleetOptions options,
                                     const coord::FleetState& resumed) {
  return std::make_unique<FleetImpl>(std::move(options), resumed);
}

}  // namespace sampan
