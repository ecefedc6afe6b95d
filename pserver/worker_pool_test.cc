#include "pserver/worker_pool.h"

#include <atomic>
#include <future>

#include "gtest/gtest.h"

namespace sampan {
namespace {

TEST(WorkerPoolTest, RunsEveryAcceptedTaskBeforeStopReturns) {
  std::atomic<int> ran{0};
  WorkerPool pool(3, 10000);
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(pool.Submit([&] { ran.fetch_add(1); }));
  }
  pool.Stop();
  EXPECT_EQ(ran.load(), 5000);
  EXPECT_FALSE(pool.Submit([] {}));  // stopped pools refuse work
}

TEST(WorkerPoolTest, RefusesWorkWhenQueueIsFull) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  WorkerPool pool(1, 2);
  std::atomic<int> ran{0};
  // The single worker blocks on the first task; two more fill the queue.
  ASSERT_TRUE(pool.Submit([released] { released.wait(); }));
  while (pool.queued() != 0) {
  }
  ASSERT_TRUE(pool.Submit([&] { ran++; }));
  ASSERT_TRUE(pool.Submit([&] { ran++; }));
  EXPECT_EQ(pool.queued(), 2u);
  EXPECT_FALSE(pool.Submit([&] { ran++; }));
  release.set_value();
  pool.Stop();
  EXPECT_EQ(ran.load(), 2);
}

}  // namespace
}  // namespace sampan
