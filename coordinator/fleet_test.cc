// The fleet's moves between real pservers on loopback ports (memory
// tables): a rescale up and down moves the rows and the ownership with the
// fewest moves, each shard ends on exactly one pserver, no move starts
// while a checkpoint has paused them, bad sizes and a second rescale are
// refused, a move a previous coordinator left unfinished
// is abandoned (its partial copy dropped), and a state that cannot be saved
// changes nothing.
#include "coordinator/fleet.h"

#include <map>

#include "absl/strings/match.h"
#include "common/hash.h"
#include "gtest/gtest.h"
#include "pserver/pserver_testlib.h"
#include "pserver/shard_copy.h"

namespace sampan {
namespace {

constexpr uint32_t kShards = 8;

std::unique_ptr<ServedPserver> Serve(uint32_t index) {
  TableOptions t;
  t.num_shards = kShards;
  t.embedding_dim = 2;
  t.rule = OptimizerRule::kAdagrad;
  auto table = NewTable(t);
  EXPECT_TRUE(table.ok()) << table.status();
  std::vector<std::unique_ptr<SparseTable>> tables;
  tables.push_back(std::move(*table));
  PserverOptions o;
  o.index = index;
  o.num_shards = kShards;
  o.shard_map_version = 0;  // owns nothing until told, as in a job
  o.run_inline = true;
  return std::make_unique<ServedPserver>(o, std::move(tables));
}

// Registers pserver `i` with the fleet and applies the answer, as `sampan
// pserver` does.
void Register(Fleet& fleet, ServedPserver& ps, uint32_t i) {
  absl::StatusOr<coord::ShardAssignment> a = fleet.Register(i, ps.address());
  ASSERT_TRUE(a.ok()) << a.status();
  ps::SetShardsRequest req;
  req.set_shard_map_version(a->shard_map_version());
  *req.mutable_owned_shards() = a->owned_shards();
  *req.mutable_frozen_shards() = a->frozen_shards();
  const grpc::Status s = ps.pserver().ApplyShardMap(req);
  ASSERT_TRUE(s.ok() || s.error_code() == grpc::StatusCode::FAILED_PRECONDITION)
      << s.error_message();
}

uint64_t Rows(ServedPserver& ps) {
  ps::StatsRequest req;
  ps::StatsResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  EXPECT_TRUE(ps.stub().Stats(&ctx, req, &resp).ok());
  return resp.rows();
}

// Waits until the fleet is `size` pservers with nothing left to move and
// no copy left to drop.
bool Settled(Fleet& fleet, uint32_t size) {
  const absl::Time limit = absl::Now() + absl::Seconds(30);
  while (absl::Now() < limit) {
    const coord::FleetStatus s = fleet.Status();
    if (s.size() == size && s.wanted() == size && s.shards_to_move() == 0 &&
        fleet.State().drops_size() == 0) {
      return true;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

class FleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint32_t i = 0; i < 4; ++i) ps_.push_back(Serve(i));
    for (uint64_t k = 1; keys_.size() < 400; ++k) keys_.push_back(k);
  }

  FleetOptions Options() const {
    FleetOptions o;
    o.num_shards = kShards;
    o.size = 2;
    o.retry_backoff = absl::Milliseconds(20);
    return o;
  }

  // Pushes every key to its owner under `map`, as a client routes.
  void PushAll(const ShardMap& map, uint64_t sequence) {
    std::map<uint32_t, std::vector<uint64_t>> by_owner;
    for (uint64_t k : keys_) by_owner[map.OwnerOfKey(k)].push_back(k);
    for (auto& [p, keys] : by_owner) {
      ASSERT_TRUE(ps_[p]
                      ->Push(0, keys,
                             std::vector<float>(keys.size() * 3, 0.25f),
                             sequence)
                      .ok());
    }
  }

  // Every key's row, read from its owner under `map`.
  std::vector<std::vector<float>> PullAll(const ShardMap& map) {
    std::vector<std::vector<float>> rows;
    for (uint64_t k : keys_) rows.push_back(ps_[map.OwnerOfKey(k)]->Pull(0, k));
    return rows;
  }

  uint64_t TotalRows(uint32_t pservers) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < pservers; ++i) n += Rows(*ps_[i]);
    return n;
  }

  std::vector<std::unique_ptr<ServedPserver>> ps_;
  std::vector<uint64_t> keys_;
};

TEST_F(FleetTest, RescalesUpAndDownMovingRowsAndOwnership) {
  auto fleet = Fleet::Create(Options(), coord::FleetState());
  Register(*fleet, *ps_[0], 0);
  Register(*fleet, *ps_[1], 1);
  PushAll(fleet->Map(), 1);
  const std::vector<std::vector<float>> before = PullAll(fleet->Map());
  ASSERT_EQ(TotalRows(2), keys_.size());

  coord::ScaleRequest req;
  req.set_num_pservers(4);
  coord::ScaleResponse resp;
  ASSERT_TRUE(fleet->Scale(req, &resp).ok());
  EXPECT_EQ(resp.from_pservers(), 2u);
  EXPECT_EQ(resp.shards_to_move(), 4u);  // 4 + 4 -> 2 + 2 + 2 + 2
  // The fleet counts the new pservers at once; nothing moves to them before
  // they register.
  EXPECT_EQ(fleet->Map().num_pservers(), 4u);
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(fleet->Status().shards_to_move(), 4u);
  Register(*fleet, *ps_[2], 2);
  Register(*fleet, *ps_[3], 3);
  ASSERT_TRUE(Settled(*fleet, 4)) << fleet->Status().DebugString();
  EXPECT_EQ(fleet->Status().shards_moved(), 4u);
  ShardMap map = fleet->Map();
  for (uint32_t p = 0; p < 4; ++p) EXPECT_EQ(map.ShardsOf(p).size(), 2u);
  // Same rows, each on one pserver only (the sources dropped theirs).
  EXPECT_EQ(PullAll(map), before);
  EXPECT_EQ(TotalRows(4), keys_.size());
  // The new owners take pushes; the old ones refuse those keys.
  PushAll(map, 2);
  const uint64_t moved_key = [&] {
    for (uint64_t k : keys_) {
      if (map.OwnerOfKey(k) >= 2) return k;
    }
    return uint64_t{0};
  }();
  ps::PullRequest pull;
  pull.add_keys(moved_key);
  ps::PullResponse pulled;
  grpc::ClientContext ctx;
  const grpc::Status refused =
      ps_[ShardOf(moved_key, kShards) % 2]->stub().Pull(&ctx, pull, &pulled);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::ABORTED);

  const uint64_t stayed = Rows(*ps_[0]) + Rows(*ps_[1]);
  // Down to 2: the leaving pservers' shards come back, then the fleet
  // shrinks.
  const std::vector<std::vector<float>> after_push = PullAll(map);
  req.set_num_pservers(2);
  ASSERT_TRUE(fleet->Scale(req, &resp).ok());
  EXPECT_EQ(resp.shards_to_move(), 4u);
  ASSERT_TRUE(Settled(*fleet, 2)) << fleet->Status().DebugString();
  map = fleet->Map();
  EXPECT_EQ(map.num_pservers(), 2u);
  EXPECT_EQ(PullAll(map), after_push);
  EXPECT_EQ(TotalRows(4), keys_.size());
  EXPECT_EQ(Rows(*ps_[2]) + Rows(*ps_[3]), 0u);
  // The rows of the shards that went out and came back, counted twice.
  EXPECT_EQ(fleet->Status().rows_moved(),
            2 * (Rows(*ps_[0]) + Rows(*ps_[1]) - stayed));
}

TEST_F(FleetTest, NoMoveWhilePausedForACheckpoint) {
  auto fleet = Fleet::Create(Options(), coord::FleetState());
  Register(*fleet, *ps_[0], 0);
  Register(*fleet, *ps_[1], 1);
  ASSERT_TRUE(fleet->PauseMoves(absl::Now() + absl::Seconds(5)));
  coord::ScaleRequest req;
  req.set_num_pservers(3);
  coord::ScaleResponse resp;
  ASSERT_TRUE(fleet->Scale(req, &resp).ok());
  Register(*fleet, *ps_[2], 2);
  const uint64_t version = fleet->Map().version;
  absl::SleepFor(absl::Milliseconds(400));
  EXPECT_EQ(fleet->Status().shards_moved(), 0u);
  EXPECT_EQ(fleet->Map().version, version);  // not even a freeze
  fleet->ResumeMoves();
  ASSERT_TRUE(Settled(*fleet, 3)) << fleet->Status().DebugString();
  EXPECT_EQ(fleet->Status().shards_moved(), resp.shards_to_move());
}

TEST_F(FleetTest, RefusesBadSizesAndASecondRescale) {
  auto fleet = Fleet::Create(Options(), coord::FleetState());
  coord::ScaleRequest req;
  coord::ScaleResponse resp;
  for (uint32_t bad : {0u, kShards + 1}) {
    req.set_num_pservers(bad);
    const grpc::Status s = fleet->Scale(req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_TRUE(absl::StrContains(s.error_message(), "[1, 8]"))
        << s.error_message();
  }
  EXPECT_EQ(fleet->size(), 2u);
  req.set_num_pservers(3);
  ASSERT_TRUE(fleet->Scale(req, &resp).ok());
  ASSERT_TRUE(fleet->Scale(req, &resp).ok());  // the same again: fine
  req.set_num_pservers(2);
  const grpc::Status busy = fleet->Scale(req, &resp);
  EXPECT_EQ(busy.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(absl::StrContains(busy.error_message(), "under way"))
      << busy.error_message();
  EXPECT_EQ(fleet->Status().wanted(), 3u);
  // A pserver outside the fleet cannot register.
  EXPECT_TRUE(
      absl::IsInvalidArgument(fleet->Register(3, ps_[3]->address()).status()));
}

TEST_F(FleetTest, AbandonsTheMoveAPreviousCoordinatorLeftUnfinished) {
  // The previous coordinator froze shard 2 at pserver 0 and copied it to
  // pserver 1, then died before the flip.
  auto first = Fleet::Create(Options(), coord::FleetState());
  Register(*first, *ps_[0], 0);
  Register(*first, *ps_[1], 1);
  PushAll(first->Map(), 1);
  coord::FleetState left = first->State();
  const uint64_t version = first->Map().version + 1;
  first.reset();
  ASSERT_TRUE(CallSetShards(ps_[0]->stub(), version, {0, 2, 4, 6}, {2},
                            absl::Seconds(5))
                  .ok());
  ShardCopyRequest copy;
  copy.shard = 2;
  copy.shard_map_version = version;
  ASSERT_TRUE(
      CallSetShards(ps_[1]->stub(), version, {1, 3, 5, 7}, {}, absl::Seconds(5))
          .ok());
  absl::StatusOr<uint64_t> copied =
      CopyShard(ps_[0]->stub(), ps_[1]->stub(), copy);
  ASSERT_TRUE(copied.ok()) << copied.status();
  ASSERT_GT(*copied, 0u);
  const uint64_t rows_before = TotalRows(2);
  left.mutable_moving()->set_shard(2);
  left.mutable_moving()->set_from(0);
  left.mutable_moving()->set_to(1);

  absl::SleepFor(absl::Milliseconds(5));  // its versions come from the clock
  auto fleet = Fleet::Create(Options(), left);
  const coord::FleetState state = fleet->State();
  EXPECT_FALSE(state.has_moving());
  EXPECT_EQ(state.owner(2), 0u);  // the source still owns it
  ASSERT_EQ(state.drops_size(), 1);
  EXPECT_EQ(state.drops(0).shard(), 2u);
  EXPECT_EQ(state.drops(0).from(), 1u);
  Register(*fleet, *ps_[0], 0);
  Register(*fleet, *ps_[1], 1);
  ASSERT_TRUE(Settled(*fleet, 2)) << fleet->State().DebugString();
  EXPECT_EQ(TotalRows(2), rows_before - *copied);  // the copy is gone
  // The source takes pushes on the shard again.
  PushAll(fleet->Map(), 2);
}

TEST_F(FleetTest, AStateThatCannotBeSavedChangesNothing) {
  FleetOptions o = Options();
  o.save = [](const coord::FleetState&) {
    return absl::UnavailableError("disk full");
  };
  auto fleet = Fleet::Create(o, coord::FleetState());
  coord::ScaleRequest req;
  req.set_num_pservers(3);
  coord::ScaleResponse resp;
  const grpc::Status s = fleet->Scale(req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "disk full"));
  EXPECT_EQ(fleet->size(), 2u);
  EXPECT_EQ(fleet->Status().wanted(), 2u);
}

}  // namespace
}  // namespace sampan
