#include "trainer/checkpoint_gate.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace sampan {
namespace {

// Four workers, 100 steps each: a checkpoint every 50 steps runs with no
// step in flight, at steps 50, 100, ... of the whole trainer.
TEST(CheckpointGate, PausesEveryStepWithNothingInFlight) {
  std::atomic<int> in_flight{0};
  std::vector<uint64_t> at;
  CheckpointGate* gate_ptr = nullptr;
  CheckpointGate gate(50, 0, [&](uint64_t epoch, bool missed) {
    EXPECT_EQ(epoch, 0u);
    EXPECT_FALSE(missed);
    EXPECT_EQ(in_flight.load(), 0);
    at.push_back(gate_ptr->steps());
    return absl::StatusOr<uint64_t>(at.size());
  });
  gate_ptr = &gate;
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(gate.Enter().ok());
        ++in_flight;
        gate.Took();
        --in_flight;
        gate.Leave();
      }
    });
  }
  for (auto& t : workers) t.join();
  ASSERT_EQ(at.size(), 7u);  // at 50..350; 400 is after the last Enter
  for (size_t i = 0; i < at.size(); ++i) {
    EXPECT_GE(at[i], 50 * (i + 1));
    EXPECT_LT(at[i], 50 * (i + 1) + 4);  // at most one step per worker late
  }
}

TEST(CheckpointGate, AnnouncedEpochAtStepAndMissed) {
  std::vector<std::pair<uint64_t, bool>> calls;
  CheckpointGate gate(0, 10, [&](uint64_t epoch, bool missed) {
    calls.push_back({epoch, missed});
    return absl::StatusOr<uint64_t>(epoch);
  });
  auto step = [&] {
    EXPECT_TRUE(gate.Enter().ok());
    gate.Took();
    gate.Leave();
  };
  gate.Announce(3, 12);
  step();  // 10 -> 11
  step();  // 11 -> 12
  EXPECT_TRUE(calls.empty());
  step();  // at 12: taken
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_pair(uint64_t{3}, false));
  gate.Announce(3, 12);  // a stale heartbeat repeats it: ignored
  gate.Announce(4, 5);   // already past step 5
  step();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1], std::make_pair(uint64_t{4}, true));
  step();
  EXPECT_EQ(calls.size(), 2u);
}

// Between epochs: an announced epoch is taken whatever its step (nothing
// steps until the next epoch), then a round that only waits; neither twice.
TEST(CheckpointGate, IdleTakesAnnouncedThenWaitingRounds) {
  std::vector<std::pair<uint64_t, bool>> calls;
  CheckpointGate gate(0, 10, [&](uint64_t epoch, bool missed) {
    calls.push_back({epoch, missed});
    return absl::StatusOr<uint64_t>(epoch);
  });
  EXPECT_TRUE(gate.Idle(0).ok());
  EXPECT_TRUE(calls.empty());
  gate.Announce(5, 40);
  EXPECT_TRUE(gate.Idle(0).ok());
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_pair(uint64_t{5}, false));
  EXPECT_TRUE(gate.Idle(5).ok());  // the same round, still listed as waiting
  EXPECT_EQ(calls.size(), 1u);
  EXPECT_TRUE(gate.Idle(6).ok());  // a steps-triggered round of the others
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1], std::make_pair(uint64_t{6}, false));
  // Training again: epoch 5 is not taken a second time at step 40.
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(gate.Enter().ok());
    gate.Took();
    gate.Leave();
  }
  EXPECT_EQ(calls.size(), 2u);
}

}  // namespace
}  // namespace sampan
