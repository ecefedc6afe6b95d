// The host's share of a tail latency: on every core one thread, pinned
// there, reads the clock in a loop for the given seconds; a gap between two
// reads longer than 200 us is time the thread did not run. On idle cores
// (nothing else runnable in the guest) that time went to the host or the
// guest kernel, not to any program the bench measures, so a serving p99
// within a few gaps of the worst one says more about the machine than
// about the server.
//
// Then one thread sleeps 2,000 times for 0.3-1.5 ms and times how late it
// wakes: the floor under any open-loop client's send lag.
//
// Usage: host_jitter [SECONDS]   (default 5). Prints one line per core and
// a RESULT line: gaps_over_1ms (per second, all cores), max_gap_ms,
// lost_pct (share of the cores' time in gaps) and the sleeps' late p99 and
// max. Run it at nice -20 on idle cores: bench/serving_p99_ab.sh does
// before each round.
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

int64_t Nanos() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;
}

struct Gaps {
  int over_200us = 0, over_1ms = 0, over_5ms = 0;
  int64_t lost_ns = 0, max_ns = 0;
};

Gaps Watch(int cpu, double seconds) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  Gaps g;
  const int64_t end = Nanos() + int64_t(seconds * 1e9);
  for (int64_t last = Nanos();;) {
    const int64_t now = Nanos();
    const int64_t gap = now - last;
    last = now;
    if (now > end) break;
    if (gap <= 200000) continue;
    ++g.over_200us;
    g.over_1ms += gap > 1000000;
    g.over_5ms += gap > 5000000;
    g.lost_ns += gap;
    g.max_ns = std::max(g.max_ns, gap);
  }
  return g;
}

// How late 2,000 sleeps of 0.3-1.5 ms wake, sorted, in ns.
std::vector<int64_t> SleepOvershoots() {
  std::vector<int64_t> late;
  for (int i = 0; i < 2000; ++i) {
    const timespec want = {0, (i % 5 + 1) * 300000};
    const int64_t t0 = Nanos();
    nanosleep(&want, nullptr);
    late.push_back(Nanos() - t0 - want.tv_nsec);
  }
  std::sort(late.begin(), late.end());
  return late;
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5;
  if (!(seconds > 0)) {
    std::fprintf(stderr, "usage: %s [SECONDS > 0]\n", argv[0]);
    return 2;
  }
  const int cpus = int(sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<Gaps> gaps(cpus);
  std::vector<std::thread> threads;
  for (int c = 0; c < cpus; ++c) {
    threads.emplace_back([&, c] { gaps[c] = Watch(c, seconds); });
  }
  for (std::thread& t : threads) t.join();
  Gaps all;
  for (int c = 0; c < cpus; ++c) {
    const Gaps& g = gaps[c];
    std::printf(
        "cpu%d: gaps > 0.2 ms %d, > 1 ms %d, > 5 ms %d; lost %.1f ms of "
        "%.0f s, longest %.2f ms\n",
        c, g.over_200us, g.over_1ms, g.over_5ms, g.lost_ns / 1e6, seconds,
        g.max_ns / 1e6);
    all.over_1ms += g.over_1ms;
    all.lost_ns += g.lost_ns;
    all.max_ns = std::max(all.max_ns, g.max_ns);
  }
  const std::vector<int64_t> late = SleepOvershoots();
  std::printf(
      "RESULT gaps_over_1ms_per_s=%.1f max_gap_ms=%.2f lost_pct=%.2f "
      "sleep_late_p99_ms=%.3f sleep_late_max_ms=%.3f\n",
      all.over_1ms / seconds, all.max_ns / 1e6,
      100.0 * all.lost_ns / (seconds * 1e9 * cpus),
      late[late.size() * 99 / 100] / 1e6, late.back() / 1e6);
  return 0;
}
