#include "common/thread_priority.h"

#include <pthread.h>
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

}  // namespace
}  // namespace sampan
