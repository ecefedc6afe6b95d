// How much of the dense allreduce a DeepFM step hides behind its backward
// pass: `ranks` trainer processes on this host (the shared-memory backend),
// each with HybridDense and a DeepFM (39 fields x 8, MLP 3 x 400) on a
// synthetic batch, alternating steps with the per-layer hook (overlapped)
// and without it (every bucket reduced after backward).
//
//   overlap_bench [--ranks=2] [--steps=60] [--batch=1024] [--gpu]
//
// hidden share = 1 - (wait after backward, overlapped) / (wait, serial),
// medians over the steps of each kind; --gpu runs the MLP with GpuMlp.
#include <signal.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/flags.h"
#include "tests/collective_harness.h"
#include "trainer/hybrid_dense.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/gpu_mlp.h"

namespace sampan {
namespace {

int Die(const absl::Status& s) {
  std::fprintf(stderr, "overlap_bench: %s\n", s.ToString().c_str());
  return 1;
}

double MedianMs(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Synthetic {
  Batch batch;
  std::vector<uint32_t> row_of_sign;
  std::vector<float> rows;
  uint32_t bias_row;
};

Synthetic MakeBatch(const CtrModel& model, int fields, size_t examples,
                    int rank) {
  Synthetic s;
  const uint32_t keys = 20000;
  std::mt19937 rng(17 + rank);
  std::uniform_int_distribution<uint32_t> key(0, keys - 1);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  s.batch.Clear();
  for (size_t i = 0; i < examples; ++i) {
    for (int slot = 1; slot <= fields; ++slot) {
      const uint32_t row = key(rng);
      s.batch.signs.push_back(row);
      s.batch.slots.push_back(static_cast<uint16_t>(slot));
      s.row_of_sign.push_back(row);
    }
    s.batch.offsets.push_back(s.batch.signs.size());
    s.batch.labels.push_back(float(rng() % 4 == 0));
  }
  s.rows.resize(size_t(keys + 1) * model.row_dim());
  for (float& r : s.rows) r = u(rng);
  s.bias_row = keys;
  return s;
}

int RunRank(const Flags& flags) {
  CtrModelOptions mo;  // DeepFM, 39 fields x 8, MLP 400-400-400
  CtrModel model(mo);
  const int rank = static_cast<int>(flags.GetInt("rank", 0).value_or(0));
  const size_t examples = flags.GetInt("batch", 1024).value_or(1024);
  const int steps = static_cast<int>(flags.GetInt("steps", 60).value_or(60));
  HybridDenseOptions ho;
  ho.coordinator_address = flags.Get("coordinator");
  ho.rank = rank;
  ho.size = static_cast<int>(flags.GetInt("ranks", 2).value_or(2));
  auto dense = HybridDense::Create(model, ho);
  if (!dense.ok()) return Die(dense.status());
  Synthetic s = MakeBatch(model, mo.fields, examples, rank);
  std::vector<float> sparse_grads(s.rows.size()), probs(examples);
  CtrModel::Workspace ws;
  std::unique_ptr<GpuMlp> gpu;
  if (flags.GetBool("gpu")) {
    auto g = GpuMlp::Create(model.mlp(), model.dense_size(), GpuMlpOptions());
    if (!g.ok()) return Die(g.status());
    gpu = std::move(*g);
    ws.gpu = gpu.get();
  }
  // [overlapped?] -> per-step milliseconds
  std::vector<double> compute[2], wait[2], step[2];
  for (int i = 0; i < steps + 2; ++i) {
    const bool overlap = i % 2 == 0;
    const absl::Time t0 = absl::Now();
    (*dense)->BeginStep(true, examples);
    std::fill(sparse_grads.begin(), sparse_grads.end(), 0.0f);
    model.Step(s.batch, s.row_of_sign, s.bias_row, s.rows.data(),
               (*dense)->weights(), sparse_grads.data(), (*dense)->grads(),
               probs.data(), &ws,
               overlap ? (*dense)->grad_ready() : CtrModel::GradReadyFn());
    const absl::Time t1 = absl::Now();
    absl::StatusOr<bool> all = (*dense)->Step();
    if (!all.ok()) return Die(all.status());
    if (i < 2) continue;  // warm-up: buffers, first-touch, connections
    compute[overlap].push_back(absl::ToDoubleMilliseconds(t1 - t0));
    wait[overlap].push_back(absl::ToDoubleMilliseconds((*dense)->last_wait()));
    step[overlap].push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
  }
  auto hash = (*dense)->Finish();
  if (!hash.ok()) return Die(hash.status());
  if (rank != 0) return 0;
  std::printf(
      "DeepFM batch %zu, %zu dense floats, %d ranks, MLP on %s, "
      "medians of %d steps each\n",
      examples, model.dense_size(), ho.size, gpu ? "the GPU" : "the CPU",
      steps / 2);
  for (int o : {0, 1}) {
    std::printf(
        "%-10s forward+backward %8.3f ms  allreduce wait %8.3f ms  "
        "step %8.3f ms\n",
        o ? "overlapped" : "serial", MedianMs(compute[o]), MedianMs(wait[o]),
        MedianMs(step[o]));
  }
  const double serial = MedianMs(wait[0]);
  std::printf("hidden share of allreduce: %.1f%%  (1 - %.3f / %.3f ms)\n",
              serial > 0 ? 100 * (1 - MedianMs(wait[1]) / serial) : 0.0,
              MedianMs(wait[1]), serial);
  return 0;
}

int RunLauncher(const Flags& flags) {
  const int ranks = static_cast<int>(flags.GetInt("ranks", 2).value_or(2));
  auto coordinator = testing::TestCoordinator::Start();
  if (!coordinator.ok()) return Die(coordinator.status());
  std::vector<std::string> extra = {
      absl::StrCat("--steps=", flags.Get("steps", "60")),
      absl::StrCat("--batch=", flags.Get("batch", "1024"))};
  if (flags.GetBool("gpu")) extra.push_back("--gpu");
  auto run =
      testing::RunRanks("/proc/self/exe", ranks, (*coordinator)->address(),
                        extra, absl::Minutes(20));
  if (!run.ok()) return Die(run.status());
  std::printf("%s", run->rank0_output.c_str());
  return run->failed == 0 ? 0 : 1;
}

int Main(int argc, char** argv) {
  auto flags = Flags::Parse(
      argc, argv, 1,
      {"role", "rank", "ranks", "coordinator", "steps", "batch", "gpu"});
  if (!flags.ok()) return Die(flags.status());
  if (flags->Get("role") == "rank") {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the launcher
    return RunRank(*flags);
  }
  return RunLauncher(*flags);
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) { return sampan::Main(argc, argv); }
