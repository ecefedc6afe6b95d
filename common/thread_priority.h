// Scheduling priority and names of threads.
//
// A pserver's background work (writing dirty rows back to RocksDB, RocksDB's
// own flushes and compactions) can wait; a trainer's Pull cannot. On a busy
// machine the kernel shares the cores by weight, so background threads run
// with a higher nice value: they still get the idle CPU, but a pull thread
// that wakes up preempts them instead of queueing behind a whole write-back
// round.
#ifndef SAMPAN_COMMON_THREAD_PRIORITY_H_
#define SAMPAN_COMMON_THREAD_PRIORITY_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace sampan {

// Nice value of background threads: weight 110 against 1024 for nice 0, so
// under contention they get about a tenth of a core's share, and all of it
// when the foreground is idle.
inline constexpr int kBackgroundNice = 10;

// Sets the calling thread's (not the process's) nice value. Raising it needs
// no privilege; a failure is ignored, since only latency suffers.
void SetCurrentThreadNice(int nice);

// The calling thread's nice value (0 when it cannot be read).
int CurrentThreadNice();

// Nice value of RocksDB's CpuPriority::kLow, which its pool threads set
// themselves when they next run a job.
inline constexpr int kRocksDbLowNice = 19;

// The ids of this process's threads whose name (/proc/self/task/*/comm) is
// `name`.
std::vector<pid_t> ThreadIdsNamed(const std::string& name);

// Sets the nice value of every thread ThreadIdsNamed(name) lists; returns
// how many it set. For pools a library starts, such as RocksDB's, whose
// threads take a lowered priority only when they next run a job.
int SetNiceOfThreadsNamed(const std::string& name, int nice);

// Names the calling thread (cut to the kernel's 15 characters), so that
// top -H, perf and the scheduler statistics in /proc say which of a
// process's threads is which.
void SetCurrentThreadName(const std::string& name);

// The cores the calling thread may use: its CPU affinity, capped by the
// CPU quotas (cgroup v2 cpu.max, rounded up) of its cgroup and every one
// above it that this process can see (/proc/self/cgroup's path under
// /sys/fs/cgroup); at least 1. For sizing pools that work on every core
// (std::thread::hardware_concurrency counts the machine's, which a
// container may not use).
int UsableCores();

// The cores a cgroup v2 cpu.max text allows, rounded up: "max 100000" (no
// quota) gives 0, "150000 100000" 2; 0 for text it cannot read.
int CpuMaxCores(const std::string& cpu_max);

}  // namespace sampan

#endif  // SAMPAN_COMMON_THREAD_PRIORITY_H_
