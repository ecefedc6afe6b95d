#include "common/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace sampan {

void SetCurrentThreadNice(int nice) {
  // On Linux PRIO_PROCESS with a thread id changes only that thread.
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice);
}

}  // namespace sampan
