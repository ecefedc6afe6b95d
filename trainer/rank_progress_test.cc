#include "trainer/rank_progress.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace sampan {
namespace {

// A trained batch of `n` examples (label e % 2, probability 0.2 or 0.8 as
// the label) that pushed `keys`.
Worker Batch(int n, std::vector<uint64_t> keys) {
  Worker w;
  for (int e = 0; e < n; ++e) {
    w.batch.labels.push_back(float(e % 2));
    w.probs.push_back(e % 2 ? 0.8f : 0.2f);
  }
  w.keys = std::move(keys);
  return w;
}

TEST(RankProgressTest, CountsEveryBatchOnceFromManyThreads) {
  RankProgress progress(/*examples=*/100, /*keep_keys=*/false);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      const Worker w = Batch(10, {1, 2});
      for (int i = 0; i < 50; ++i) progress.Trained(w, 0.5);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(progress.examples(), 100u + 4 * 50 * 10);
  coord::TrainerProgress p;
  progress.Fill(&p);
  EXPECT_EQ(p.examples(), 2100u);
  EXPECT_DOUBLE_EQ(p.loss_sum(), 4 * 50 * 0.5);
  EXPECT_DOUBLE_EQ(p.train_auc(), 1.0);  // every positive above every negative
  EXPECT_TRUE(progress.TakeKeys().empty());  // not kept
}

TEST(RankProgressTest, KeysOfAPassEachOnceThenForgotten) {
  RankProgress progress(0, /*keep_keys=*/true);
  progress.Trained(Batch(2, {7, 3}), 0.1);
  progress.Trained(Batch(2, {3, 9}), 0.1);
  std::vector<uint64_t> keys = progress.TakeKeys();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<uint64_t>{3, 7, 9}));
  EXPECT_TRUE(progress.TakeKeys().empty());
  progress.Trained(Batch(1, {5}), 0.1);
  EXPECT_EQ(progress.TakeKeys(), std::vector<uint64_t>{5});
}

TEST(RankProgressTest, PassResultCarriesTheExamplesSoFar) {
  RankProgress progress(40, false);
  progress.Trained(Batch(2, {}), 0);
  progress.PassDone(nullptr);  // not rank 0
  coord::PassResult result;
  result.set_name("2026-12-04-13");
  progress.PassDone(&result);
  EXPECT_EQ(result.examples(), 42u);
  coord::TrainerProgress p;
  progress.Fill(&p);
  EXPECT_EQ(p.passes_done(), 2u);
  EXPECT_EQ(p.last_result().name(), "2026-12-04-13");
  EXPECT_EQ(p.last_result().examples(), 42u);
}

TEST(RankProgressTest, KeepsTheFirstErrorAndRaisesTheStopFlag) {
  RankProgress progress(0, false);
  EXPECT_FALSE(progress.failed()->load());
  progress.Fail(absl::OkStatus());
  EXPECT_FALSE(progress.failed()->load());
  progress.Fail(absl::UnavailableError("coordinator unreachable"));
  progress.Fail(absl::InternalError("later"));
  EXPECT_TRUE(progress.failed()->load());
  EXPECT_EQ(progress.error(),
            absl::UnavailableError("coordinator unreachable"));
}

}  // namespace
}  // namespace sampan
