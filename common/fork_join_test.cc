#include "common/fork_join.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

TEST(ForkJoinPoolTest, EveryPartRunsExactlyOnce) {
  ForkJoinPool pool(3, "test");
  for (int parts : {0, 1, 2, 3, 4, 7, 100}) {
    std::vector<std::atomic<int>> runs(parts);
    pool.Run(parts, [&](int i) { runs[i].fetch_add(1); });
    for (int i = 0; i < parts; ++i) EXPECT_EQ(runs[i].load(), 1) << i;
  }
}

TEST(ForkJoinPoolTest, WithoutWorkersTheCallerRunsEveryPart) {
  ForkJoinPool pool(0, "test");
  const std::thread::id caller = std::this_thread::get_id();
  int ran = 0;
  pool.Run(5, [&](int) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++ran;
  });
  EXPECT_EQ(ran, 5);
}

TEST(ForkJoinPoolTest, PartsRunOnTheWorkersSideBySide) {
  ForkJoinPool pool(2, "test", /*nice=*/3);
  const std::thread::id caller = std::this_thread::get_id();
  absl::Notification second_ran;
  std::thread::id ids[2];
  int nice[2] = {0, 0};
  // Part 0 waits for part 1: both must run at once, on two workers.
  pool.Run(2, [&](int i) {
    ids[i] = std::this_thread::get_id();
    errno = 0;
    nice[i] = getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)));
    if (i == 0) {
      EXPECT_TRUE(second_ran.WaitForNotificationWithTimeout(absl::Seconds(30)));
    } else {
      second_ran.Notify();
    }
  });
  EXPECT_TRUE(second_ran.HasBeenNotified());
  EXPECT_NE(ids[0], caller);
  EXPECT_NE(ids[1], caller);
  EXPECT_NE(ids[0], ids[1]);
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)));
  EXPECT_EQ(nice[0], std::min(own + 3, 19));
  EXPECT_EQ(nice[1], std::min(own + 3, 19));
}

TEST(ForkJoinPoolTest, CallsAreServedInArrivalOrder) {
  ForkJoinPool pool(1, "test");
  absl::Notification started, release;
  std::mutex mu;
  std::vector<int> order;  // guarded by mu
  // Call A holds the one worker until released.
  std::thread a([&] {
    pool.Run(1, [&](int) {
      started.Notify();
      release.WaitForNotification();
    });
  });
  started.WaitForNotification();
  auto call = [&](int who) {
    return std::thread([&, who] {
      pool.Run(3, [&](int) {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(who);
      });
    });
  };
  // B queues before C: every part of B runs before any of C.
  std::thread b = call(1);
  for (int i = 0; i < 3000 && pool.waiting() < 1; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(pool.waiting(), 1u);
  std::thread c = call(2);
  for (int i = 0; i < 3000 && pool.waiting() < 2; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(pool.waiting(), 2u);
  release.Notify();
  a.join();
  b.join();
  c.join();
  EXPECT_EQ(order, (std::vector<int>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(pool.waiting(), 0u);
}

TEST(ForkJoinPoolTest, ManyCallersAtOnce) {
  ForkJoinPool pool(2, "test");
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int k = 0; k < 2000; ++k) {
        const int parts = 1 + (k + t) % 8;
        std::vector<std::atomic<int>> runs(parts);
        pool.Run(parts, [&](int i) { runs[i].fetch_add(1); });
        for (int i = 0; i < parts; ++i) {
          if (runs[i].load() != 1) wrong.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace sampan
