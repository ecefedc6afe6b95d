#include "common/thread_priority.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace sampan {
namespace {

int NiceOf(pid_t tid) {
  errno = 0;
  return getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
}

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

TEST(ThreadPriority, ChangesOnlyTheCallingThread) {
  const int before = NiceOf(Tid());
  const int want = std::min(before + 3, 19);
  int inside = -100;
  std::thread t([&] {
    SetCurrentThreadNice(want);
    inside = NiceOf(Tid());
  });
  t.join();
  EXPECT_EQ(inside, want);
  EXPECT_EQ(NiceOf(Tid()), before);  // the test's own thread is untouched
}

TEST(ThreadPriority, SetsThreadsByName) {
  const int before = NiceOf(Tid());
  const int want = std::min(before + 2, 19);
  std::atomic<int> phase{0};
  int inside = -100;
  std::thread t([&] {
    SetCurrentThreadName("sampan:prio");
    phase = 1;
    while (phase != 2) std::this_thread::yield();
    inside = NiceOf(Tid());
  });
  while (phase != 1) std::this_thread::yield();
  ASSERT_EQ(ThreadIdsNamed("sampan:prio").size(), 1u);
  EXPECT_TRUE(ThreadIdsNamed("sampan:none").empty());
  EXPECT_EQ(SetNiceOfThreadsNamed("sampan:prio", want), 1);
  EXPECT_EQ(SetNiceOfThreadsNamed("sampan:none", want), 0);
  phase = 2;
  t.join();
  EXPECT_EQ(inside, want);
  EXPECT_EQ(NiceOf(Tid()), before);
}

TEST(ThreadPriority, LongNamesAreCut) {
  std::string got;
  std::thread t([&] {
    SetCurrentThreadName("a-name-of-twenty-chars");
    char buf[32] = {};
    pthread_getname_np(pthread_self(), buf, sizeof(buf));
    got = buf;
  });
  t.join();
  EXPECT_EQ(got, "a-name-of-twent");
}

TEST(ThreadPriority, UsableCoresFollowsTheAffinity) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  const int cores = UsableCores();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, CPU_COUNT(&all));
  int usable_pinned = 0;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &all)) {
        CPU_SET(c, &one);
        break;
      }
    }
    if (sched_setaffinity(0, sizeof(one), &one) == 0) {
      usable_pinned = UsableCores();
    }
  });
  t.join();
  EXPECT_EQ(usable_pinned, 1);
}

TEST(ThreadPriority, CpuMaxCoresRoundsTheQuotaUp) {
  EXPECT_EQ(CpuMaxCores("max 100000"), 0);
  EXPECT_EQ(CpuMaxCores("100000 100000"), 1);
  EXPECT_EQ(CpuMaxCores("150000 100000"), 2);
  EXPECT_EQ(CpuMaxCores("50000 100000\n"), 1);
  EXPECT_EQ(CpuMaxCores("400000 100000"), 4);
  EXPECT_EQ(CpuMaxCores(""), 0);
  EXPECT_EQ(CpuMaxCores("12x 100000"), 0);
  EXPECT_EQ(CpuMaxCores("100000 0"), 0);
  EXPECT_EQ(CpuMaxCores("-5 100000"), 0);
}

}  // namespace
}  // namespace sampan
