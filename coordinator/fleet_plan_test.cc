#include "coordinator/fleet_plan.h"

#include <map>

#include "gtest/gtest.h"

namespace sampan {
namespace {

std::vector<uint32_t> Initial(uint32_t shards, uint32_t pservers) {
  std::vector<uint32_t> owner(shards);
  for (uint32_t s = 0; s < shards; ++s) owner[s] = s % pservers;
  return owner;
}

// Applies the moves, checking each one's source, and returns the owners.
std::vector<uint32_t> Apply(std::vector<uint32_t> owner,
                            const std::vector<PlannedMove>& moves) {
  for (const PlannedMove& m : moves) {
    EXPECT_EQ(owner[m.shard], m.from) << "shard " << m.shard;
    owner[m.shard] = m.to;
  }
  return owner;
}

void ExpectBalanced(const std::vector<uint32_t>& owner, uint32_t size) {
  std::map<uint32_t, uint32_t> count;
  for (uint32_t p : owner) {
    ASSERT_LT(p, size);
    ++count[p];
  }
  const uint32_t low = owner.size() / size;
  for (uint32_t p = 0; p < size; ++p) {
    EXPECT_GE(count[p], low) << "pserver " << p;
    EXPECT_LE(count[p], low + 1) << "pserver " << p;
  }
}

TEST(FleetPlanTest, GrowMovesOnlyTheNewPserversShares) {
  // 32 shards, 2 -> 3: the new pserver gets 10 (32/3 rounded down), the
  // fewest moves that balance the fleet; nothing moves between the old two.
  std::vector<PlannedMove> moves = PlanMoves(Initial(32, 2), 3);
  EXPECT_EQ(moves.size(), 10u);
  for (const PlannedMove& m : moves) EXPECT_EQ(m.to, 2u);
  ExpectBalanced(Apply(Initial(32, 2), moves), 3);
}

TEST(FleetPlanTest, ShrinkMovesOnlyTheLeavingPserversShards) {
  std::vector<uint32_t> owner = Initial(32, 4);
  std::vector<PlannedMove> moves = PlanMoves(owner, 2);
  EXPECT_EQ(moves.size(), 16u);
  for (const PlannedMove& m : moves) {
    EXPECT_GE(m.from, 2u);
    EXPECT_LT(m.to, 2u);
  }
  ExpectBalanced(Apply(owner, moves), 2);
}

TEST(FleetPlanTest, BalancedFleetOfTheSameSizeMovesNothing) {
  EXPECT_TRUE(PlanMoves(Initial(32, 3), 3).empty());
  EXPECT_TRUE(PlanMoves(Initial(7, 7), 7).empty());
  // A coordinator of trainers only (collective tests) has no fleet.
  EXPECT_TRUE(PlanMoves({}, 0).empty());
}

TEST(FleetPlanTest, ChainOfRescalesStaysBalancedAndMinimal) {
  // 2 -> 3 -> 4 -> 2, as the fault suite scales; each step's moves are the
  // shards above their pserver's share plus those leaving.
  std::vector<uint32_t> owner = Initial(64, 2);
  for (uint32_t size : {3u, 4u, 2u, 5u, 1u}) {
    std::vector<PlannedMove> moves = PlanMoves(owner, size);
    owner = Apply(owner, moves);
    ExpectBalanced(owner, size);
    EXPECT_TRUE(PlanMoves(owner, size).empty()) << "size " << size;
  }
}

TEST(FleetPlanTest, UnbalancedOwnersAreEvenedOut) {
  // Everything on pserver 0 of 2: half moves, no more.
  std::vector<uint32_t> owner(10, 0);
  std::vector<PlannedMove> moves = PlanMoves(owner, 2);
  EXPECT_EQ(moves.size(), 5u);
  ExpectBalanced(Apply(owner, moves), 2);
}

}  // namespace
}  // namespace sampan
