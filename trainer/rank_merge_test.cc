#include "trainer/rank_merge.h"

#include <map>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/collective_harness.h"

namespace sampan {
namespace {

constexpr int kRowDim = 3;

struct Row {
  float grad[kRowDim] = {0, 0, 0};
  float show = 0, click = 0;
};

// Rank r's step s: keys 0..39 shared by every rank, 1000 * (r + 1) + k its
// own; values that tell rank, step, key and float apart.
StepGradients Given(int rank, int step) {
  StepGradients g;
  auto add = [&](uint64_t key) {
    g.keys.push_back(key);
    g.shows.push_back(1.0f + rank);
    g.clicks.push_back(rank == 1 ? 1.0f : 0.0f);
    for (int d = 0; d < kRowDim; ++d) {
      g.grads.push_back(0.5f * (rank + 1) + 0.25f * step + 0.125f * d +
                        float(key % 7));
    }
  };
  for (uint64_t k = 0; k < 40; ++k) add(k);
  // Keys whose bits, read as floats, are NaNs and infinities: the exchange
  // must move them as bits.
  for (uint64_t k :
       {~uint64_t{0}, uint64_t{0x7FF0000000000001},
        uint64_t{0xFFC00001FFC00001}, uint64_t{0x7F8000007F800000}}) {
    add(k);
  }
  for (uint64_t k = 0; k < 10; ++k) add(1000 * (rank + 1) + k);
  return g;
}

RankMergeOptions Options(const std::string& coordinator, int rank, int size,
                         absl::Duration timeout, bool shared_memory = true) {
  RankMergeOptions o;
  o.shared_memory = shared_memory;
  o.coordinator_address = coordinator;
  o.rank = rank;
  o.size = size;
  o.timeout = timeout;
  return o;
}

// Three ranks (threads) merge three steps over shared memory or Gloo.
void CheckMerge(bool shared_memory) {
  absl::StatusOr<std::unique_ptr<testing::TestCoordinator>> c =
      testing::TestCoordinator::Start();
  ASSERT_TRUE(c.ok()) << c.status();
  constexpr int kRanks = 3, kSteps = 3;
  // out[step][rank]: what each rank pushes. Rank 2 is out of data in the
  // last step (it gives nothing, yet still owns and pushes keys).
  std::vector<std::vector<StepGradients>> out(
      kSteps, std::vector<StepGradients>(kRanks));
  std::vector<absl::Status> results(kRanks);
  std::vector<CollectiveRankMerge::Stats> stats(kRanks);
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      absl::StatusOr<std::unique_ptr<CollectiveRankMerge>> m =
          CollectiveRankMerge::Join(Options((*c)->address(), r, kRanks,
                                            absl::Seconds(30), shared_memory));
      if (!m.ok()) {
        results[r] = m.status();
        return;
      }
      for (int s = 0; s < kSteps; ++s) {
        out[s][r] = (s == kSteps - 1 && r == 2) ? StepGradients() : Given(r, s);
        results[r] = (*m)->Merge(kRowDim, &out[s][r]);
        if (!results[r].ok()) return;
      }
      stats[r] = (*m)->stats();
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(results[r].ok()) << results[r];
  uint64_t given = 0, pushed = 0;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(stats[r].steps, uint64_t{kSteps});
    given += stats[r].keys_given;
    pushed += stats[r].keys_pushed;
  }
  // 44 keys every rank gives, 10 of its own; rank 2 sits out the last step.
  EXPECT_EQ(given, uint64_t{(kRanks * kSteps - 1) * 54});
  EXPECT_EQ(pushed, uint64_t{(kSteps - 1) * (44 + kRanks * 10) + 44 + 20});

  for (int s = 0; s < kSteps; ++s) {
    std::map<uint64_t, Row> want;
    for (int r = 0; r < kRanks; ++r) {
      if (s == kSteps - 1 && r == 2) continue;
      const StepGradients g = Given(r, s);
      for (size_t k = 0; k < g.keys.size(); ++k) {
        Row& w = want[g.keys[k]];
        w.show += g.shows[k];
        w.click += g.clicks[k];
        for (int d = 0; d < kRowDim; ++d) {
          w.grad[d] += g.grads[k * kRowDim + d];
        }
      }
    }
    std::map<uint64_t, int> seen;
    int owners_used = 0;
    for (int r = 0; r < kRanks; ++r) {
      const StepGradients& g = out[s][r];
      ASSERT_EQ(g.shows.size(), g.keys.size());
      ASSERT_EQ(g.grads.size(), g.keys.size() * kRowDim);
      owners_used += g.keys.empty() ? 0 : 1;
      for (size_t k = 0; k < g.keys.size(); ++k) {
        const uint64_t key = g.keys[k];
        EXPECT_EQ(CollectiveRankMerge::OwnerOf(key, kRanks), r) << key;
        EXPECT_EQ(++seen[key], 1)
            << "step " << s << ": key " << key << " pushed twice";
        auto it = want.find(key);
        ASSERT_NE(it, want.end()) << "step " << s << ": made-up key " << key;
        EXPECT_EQ(g.shows[k], it->second.show) << key;
        EXPECT_EQ(g.clicks[k], it->second.click) << key;
        for (int d = 0; d < kRowDim; ++d) {
          EXPECT_FLOAT_EQ(g.grads[k * kRowDim + d], it->second.grad[d]) << key;
        }
      }
    }
    EXPECT_EQ(seen.size(), want.size()) << "step " << s << " lost keys";
    EXPECT_EQ(owners_used, kRanks) << "every rank pushes a share";
  }
}

TEST(RankMergeTest, EachKeyComesOutOnceAtItsOwnerSummedOverRanks) {
  CheckMerge(/*shared_memory=*/true);
}

TEST(RankMergeTest, TheSameOverGlooTcp) { CheckMerge(/*shared_memory=*/false); }

TEST(RankMergeTest, AStepOfMoreThan65536KeysComesThroughWhole) {
  // The counts travel in two float halves; 70,001 keys need both.
  absl::StatusOr<std::unique_ptr<testing::TestCoordinator>> c =
      testing::TestCoordinator::Start();
  ASSERT_TRUE(c.ok()) << c.status();
  constexpr size_t kKeys = 70001;
  std::vector<StepGradients> out(2);
  std::vector<absl::Status> results(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      absl::StatusOr<std::unique_ptr<CollectiveRankMerge>> m =
          CollectiveRankMerge::Join(
              Options((*c)->address(), r, 2, absl::Seconds(30)));
      if (!m.ok()) {
        results[r] = m.status();
        return;
      }
      StepGradients& g = out[r];
      for (size_t k = 0; k < (r == 0 ? kKeys : 3); ++k) {
        g.keys.push_back(k);
        g.shows.push_back(1);
        g.clicks.push_back(0);
        for (int d = 0; d < kRowDim; ++d) g.grads.push_back(float(k % 5));
      }
      results[r] = (*m)->Merge(kRowDim, &g);
    });
  }
  for (std::thread& t : ranks) t.join();
  ASSERT_TRUE(results[0].ok()) << results[0];
  ASSERT_TRUE(results[1].ok()) << results[1];
  EXPECT_EQ(out[0].keys.size() + out[1].keys.size(), kKeys);
  for (int r = 0; r < 2; ++r) {
    for (size_t k = 0; k < out[r].keys.size(); ++k) {
      const uint64_t key = out[r].keys[k];
      EXPECT_EQ(out[r].shows[k], key < 3 ? 2.0f : 1.0f) << key;
      EXPECT_EQ(out[r].grads[k * kRowDim], (key < 3 ? 2 : 1) * float(key % 5));
    }
  }
}

TEST(RankMergeTest, OneRankIsItsOwnMerge) {
  absl::StatusOr<std::unique_ptr<testing::TestCoordinator>> c =
      testing::TestCoordinator::Start();
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::unique_ptr<CollectiveRankMerge>> m =
      CollectiveRankMerge::Join(
          Options((*c)->address(), 0, 1, absl::Seconds(10)));
  ASSERT_TRUE(m.ok()) << m.status();
  StepGradients g = Given(0, 0);
  const std::vector<uint64_t> keys = g.keys;
  ASSERT_TRUE((*m)->Merge(kRowDim, &g).ok());
  EXPECT_EQ(g.keys, keys);
}

TEST(RankMergeTest, APeerThatNeverMergesIsAnErrorWithinTheTimeout) {
  absl::StatusOr<std::unique_ptr<testing::TestCoordinator>> c =
      testing::TestCoordinator::Start();
  ASSERT_TRUE(c.ok()) << c.status();
  std::unique_ptr<CollectiveRankMerge> quiet;
  absl::Status joined;
  std::thread peer([&] {
    absl::StatusOr<std::unique_ptr<CollectiveRankMerge>> m =
        CollectiveRankMerge::Join(
            Options((*c)->address(), 1, 2, absl::Seconds(5)));
    joined = m.status();
    if (m.ok()) quiet = std::move(*m);  // joins, then never merges
  });
  absl::StatusOr<std::unique_ptr<CollectiveRankMerge>> m =
      CollectiveRankMerge::Join(
          Options((*c)->address(), 0, 2, absl::Seconds(5)));
  peer.join();
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(joined.ok()) << joined;
  StepGradients g = Given(0, 0);
  const absl::Time start = absl::Now();
  const absl::Status s = (*m)->Merge(kRowDim, &g);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s)) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  // Broken for good: the next step fails at once with the same error.
  StepGradients again = Given(0, 1);
  EXPECT_EQ((*m)->Merge(kRowDim, &again).code(), s.code());
}

}  // namespace
}  // namespace sampan
