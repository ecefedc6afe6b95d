// What the table benchmarks share: YCSB's Zipfian key ranks, the key of a
// rank, wall and CPU clocks, and the process's resident memory.
#ifndef SAMPAN_BENCH_BENCH_UTIL_H_
#define SAMPAN_BENCH_BENCH_UTIL_H_

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>

#include "common/hash.h"

namespace sampan {

// YCSB's Zipfian generator (Gray et al. 1994), O(1) memory.
class Zipf {
 public:
  Zipf(uint64_t n, double theta) : n_(n), theta_(theta) {
    double zetan = 0;
    for (uint64_t i = 1; i <= n; ++i) zetan += 1 / std::pow(i, theta);
    const double zeta2 = 1 + 1 / std::pow(2, theta);
    zetan_ = zetan;
    alpha_ = 1 / (1 - theta);
    eta_ = (1 - std::pow(2.0 / n, 1 - theta)) / (1 - zeta2 / zetan);
  }
  uint64_t Next(std::mt19937_64& rng) {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    const double uz = u * zetan_;
    if (uz < 1) return 0;
    if (uz < 1 + std::pow(0.5, theta_)) return 1;
    return std::min<uint64_t>(
        n_ - 1, uint64_t(n_ * std::pow(eta_ * u - eta_ + 1, alpha_)));
  }

 private:
  uint64_t n_;
  double theta_, zetan_, alpha_, eta_;
};

inline uint64_t KeyOf(uint64_t rank) { return Fmix64(rank + 1); }

inline double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

inline double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

inline long PeakRssKb() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// Resident set now, from /proc/self/statm (pages).
inline long RssKb() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace sampan

#endif  // SAMPAN_BENCH_BENCH_UTIL_H_
