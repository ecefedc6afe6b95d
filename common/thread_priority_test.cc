#include "common/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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

}  // namespace
}  // namespace sampan
