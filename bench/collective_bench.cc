// Allreduce latency and bus bandwidth on loopback, every backend algorithm
// side by side in one run.
//
//   collective_bench --ranks=2 --reps=3 [--algorithms=a,b] [--max_bytes=N]
//
// Starts a coordinator in this process and --ranks copies of itself as rank
// processes. For each message size (4 KiB .. --max_bytes, x4) the algorithms
// take turns, so a noisy neighbour hurts all of them alike; the sweep is
// repeated --reps times and the median is printed:
//   algorithm  bytes  ranks  latency_us  busbw_GBps
// with busbw = 2(N-1)/N * bytes / time (the NCCL-tests convention).
#include <signal.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "collective/communicator.h"
#include "common/flags.h"
#include "tests/collective_harness.h"

namespace sampan {
namespace collective {
namespace {

struct Algo {
  const char* name;
  GlooAlgorithm algorithm;
};
const Algo kAlgos[] = {
    {"sampan_shm", GlooAlgorithm::kRingChunked},  // shared_memory below
    {"gloo_ring_chunked", GlooAlgorithm::kRingChunked},
    {"gloo_halving_doubling", GlooAlgorithm::kHalvingDoubling},
    {"gloo_allreduce", GlooAlgorithm::kGlooAllreduce},
};

int Die(const absl::Status& s) {
  std::fprintf(stderr, "collective_bench: %s\n", s.ToString().c_str());
  return 2;
}

// Seconds per allreduce of `count` floats: enough iterations for ~0.2 s or
// 64 MiB moved, at least 3, after 2 warm-up calls. Ranks agree on the count
// because it depends only on the size.
absl::StatusOr<double> TimeOne(Communicator* comm, std::vector<float>& data,
                               size_t count) {
  const absl::Duration timeout = absl::Seconds(60);
  const size_t bytes = count * sizeof(float);
  const int iters =
      static_cast<int>(std::clamp<size_t>((256u << 20) / bytes, 3, 2000));
  for (int i = 0; i < 2; ++i) {
    absl::Status s =
        comm->AllReduce(data.data(), count, ReduceOp::kSum, timeout);
    if (!s.ok()) return s;
  }
  absl::Status s = comm->Barrier(timeout);
  if (!s.ok()) return s;
  const absl::Time start = absl::Now();
  for (int i = 0; i < iters; ++i) {
    s = comm->AllReduce(data.data(), count, ReduceOp::kSum, timeout);
    if (!s.ok()) return s;
  }
  return absl::ToDoubleSeconds(absl::Now() - start) / iters;
}

int RunRank(const Flags& flags, const std::vector<std::string>& algos,
            const std::vector<size_t>& sizes, int reps) {
  std::vector<std::unique_ptr<Communicator>> comms;
  for (const std::string& name : algos) {
    CommunicatorOptions options;
    options.coordinator_address = flags.Get("coordinator");
    options.name = name;
    options.rank = static_cast<int>(flags.GetInt("rank", 0).value_or(0));
    options.size = static_cast<int>(flags.GetInt("ranks", 2).value_or(2));
    options.backend = Backend::kGloo;
    options.shared_memory = name == "sampan_shm";
    for (const Algo& a : kAlgos) {
      if (name == a.name) options.gloo_algorithm = a.algorithm;
    }
    auto comm = NewCommunicator(options);
    if (!comm.ok()) return Die(comm.status());
    comms.push_back(std::move(*comm));
  }
  std::vector<float> data(sizes.back() / sizeof(float), 1.0f);
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t bytes : sizes) {
      for (size_t a = 0; a < comms.size(); ++a) {
        auto t = TimeOne(comms[a].get(), data, bytes / sizeof(float));
        if (!t.ok()) return Die(t.status());
        if (comms[a]->rank() == 0) {
          std::printf("%s %zu %.3f\n", algos[a].c_str(), bytes, *t * 1e6);
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

int RunLauncher(const Flags& flags, const std::vector<std::string>& algos,
                const std::vector<size_t>& sizes, int reps) {
  const int ranks = static_cast<int>(flags.GetInt("ranks", 2).value_or(2));
  auto coordinator = testing::TestCoordinator::Start();
  if (!coordinator.ok()) return Die(coordinator.status());
  auto run = testing::RunRanks(
      "/proc/self/exe", ranks, (*coordinator)->address(),
      {absl::StrCat("--algorithms=", flags.Get("algorithms", "")),
       absl::StrCat("--max_bytes=", sizes.back()),
       absl::StrCat("--reps=", reps)},
      absl::Minutes(30));
  if (!run.ok()) return Die(run.status());
  const std::string& out = run->rank0_output;
  const int failed = run->failed;
  std::map<std::pair<std::string, size_t>, std::vector<double>> us;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() != 3) continue;
    us[{f[0], std::stoull(f[1])}].push_back(std::stod(f[2]));
  }
  std::printf("%-24s %10s %5s %12s %11s  (median of %d)\n", "algorithm",
              "bytes", "ranks", "latency_us", "busbw_GBps", reps);
  for (size_t bytes : sizes) {
    for (const std::string& a : algos) {
      std::vector<double>& v = us[{a, bytes}];
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      const double med = v[v.size() / 2];
      const double busbw =
          2.0 * (ranks - 1) / ranks * bytes / (med * 1e-6) / 1e9;
      std::printf("%-24s %10zu %5d %12.1f %11.3f\n", a.c_str(), bytes, ranks,
                  med, busbw);
    }
  }
  return failed == 0 ? 0 : 1;
}

int Main(int argc, char** argv) {
  auto flags = Flags::Parse(argc, argv, 1,
                            {"role", "rank", "ranks", "coordinator",
                             "algorithms", "max_bytes", "reps"});
  if (!flags.ok()) return Die(flags.status());
  std::vector<std::string> algos;
  const std::string list = flags->Get("algorithms", "");
  if (list.empty()) {
    for (const Algo& a : kAlgos) algos.push_back(a.name);
  } else {
    algos = absl::StrSplit(list, ',');
  }
  std::vector<size_t> sizes;
  const size_t max_bytes =
      flags->GetInt("max_bytes", 64 << 20).value_or(64 << 20);
  for (size_t b = 4096; b <= max_bytes; b *= 4) sizes.push_back(b);
  const int reps = static_cast<int>(flags->GetInt("reps", 3).value_or(3));
  if (flags->Get("role") == "rank") {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the launcher
    return RunRank(*flags, algos, sizes, reps);
  }
  return RunLauncher(*flags, algos, sizes, reps);
}

}  // namespace
}  // namespace collective
}  // namespace sampan

int main(int argc, char** argv) { return sampan::collective::Main(argc, argv); }
