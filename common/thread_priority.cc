#include "common/thread_priority.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace sampan {

void SetCurrentThreadNice(int nice) {
  // On Linux PRIO_PROCESS with a thread id changes only that thread.
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice);
}

std::vector<pid_t> ThreadIdsNamed(const std::string& name) {
  std::vector<pid_t> tids;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string got;
    if (!std::getline(comm, got) || got != name) continue;
    tids.push_back(static_cast<pid_t>(std::stol(task.path().filename())));
  }
  return tids;
}

int SetNiceOfThreadsNamed(const std::string& name, int nice) {
  int set = 0;
  for (pid_t tid : ThreadIdsNamed(name)) {
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice) == 0) ++set;
  }
  return set;
}

void SetCurrentThreadName(const std::string& name) {
  (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

int UsableCores() {
  int cores = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  if (cores <= 0) cores = int(std::thread::hardware_concurrency());
  // "max 100000" (no quota) or "<quota> <period>" in microseconds.
  std::ifstream cpu_max("/sys/fs/cgroup/cpu.max");
  std::string quota;
  long period = 0;
  if (cpu_max >> quota >> period && quota != "max" && period > 0) {
    const long q = std::strtol(quota.c_str(), nullptr, 10);
    if (q > 0) cores = std::min<long>(cores, (q + period - 1) / period);
  }
  return std::max(1, cores);
}

}  // namespace sampan
