#include "common/thread_priority.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
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

int CurrentThreadNice() {
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  return errno == 0 ? nice : 0;
}

int CpuMaxCores(const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota;
  long period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  char* end = nullptr;
  const long q = std::strtol(quota.c_str(), &end, 10);
  if (end == quota.c_str() || *end != '\0' || q <= 0) return 0;
  return int((q + period - 1) / period);
}

int UsableCores() {
  int cores = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cores = CPU_COUNT(&set);
  if (cores <= 0) cores = int(std::thread::hardware_concurrency());
  // The v2 line "0::/a/b": the quotas of /a/b, /a and the root apply.
  std::ifstream groups("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(groups, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  // path, then each parent up to "" (the root).
  for (;;) {
    std::ifstream file("/sys/fs/cgroup" + path + "/cpu.max");
    std::string text;
    if (std::getline(file, text)) {
      if (const int quota = CpuMaxCores(text); quota > 0) {
        cores = std::min(cores, quota);
      }
    }
    if (path.empty()) break;
    const size_t slash = path.find_last_of('/');
    path.resize(slash == std::string::npos ? 0 : slash);
  }
  return std::max(1, cores);
}

}  // namespace sampan
