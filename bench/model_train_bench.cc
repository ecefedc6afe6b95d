// Trains one CTR model locally (in-process table, data in memory) on a file
// holding out its last lines, and prints test AUC/logloss/COPC, training
// examples/s, the dense FLOP/s it reached, and the machine's Eigen GEMM
// FLOP/s measured in the same run (single-threaded, per core, times threads).
//
//   model_train_bench --data=FILE [--format=criteo|avazu] [--model=deepfm]
//     [--holdout=0.1] [--epochs=1] [--threads=2] [--batch=1024] [--dim=8]
//     [--hidden=400,400,400] [--cross=3] [--lr=0.05] [--dense_lr=0.001]
//     [--rule=adagrad|adam|ftrl|sgd] [--l2=0] [--l1=0] [--init=0.01] [--seed=1]
//     [--row_format=fp32|fp16|int8] [--rounding=stochastic|nearest]
//     [--min_count=0] [--int=buckets|log|both] [--init_acc=0.01] [--empty]
//     [--gemm] [--gather]
// --gather: the same-run peer of sparse models, one thread's rate of
// looking up every training sign in an absl::flat_hash_map and summing its
// row (the reads of a Pull, with nothing written), in examples/s.
// cpu_s is the process's CPU time while training: on shared cores it moves
// less with the load than the wall-clock rate.
// --int: Criteo's integer fields as bucket signs, dense log(1 + x) inputs,
// or both (data.integer_features). --empty: an empty field is a sign of its
// own (data.empty_field_signs). --init_acc: Adagrad's starting sum of w,
// --emb_acc of v (default: as a job maps model.type).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/flags.h"
#include "sparse_table/job_options.h"
#include "trainer/local_trainer.h"
#include "trainer/model/gemm.h"

namespace sampan {
namespace {

double Num(const Flags& f, const std::string& name, double def) {
  double v = def;
  if (f.Has(name) && !absl::SimpleAtod(f.Get(name), &v)) {
    std::fprintf(stderr, "--%s: not a number\n", name.c_str());
    std::exit(2);
  }
  return v;
}

bool ParseKind(const std::string& s, CtrKind* kind) {
  const std::pair<const char*, CtrKind> kinds[] = {
      {"lr", CtrKind::kLr},         {"fm", CtrKind::kFm},
      {"dnn", CtrKind::kDnn},       {"wide_deep", CtrKind::kWideDeep},
      {"deepfm", CtrKind::kDeepFm}, {"dcn_v2", CtrKind::kDcnV2}};
  for (const auto& [name, k] : kinds) {
    if (s == name) {
      *kind = k;
      return true;
    }
  }
  return false;
}

// FLOP/s of one thread multiplying 1024 x 400 by 400 x 400 (the DeepFM MLP's
// shape), median-free best of 5 to see the machine's attainable rate.
double GemmFlops() {
  // The products the layers run (gemm.h: the copy this CPU gets).
  std::vector<float> a(1024 * 400, 0.5f), b(400 * 400, 0.25f), c(1024 * 400);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) {
      Gemm(false, false, 1024, 400, 400, a.data(), b.data(), false, c.data());
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    best = std::max(best, 20 * 2.0 * 1024 * 400 * 400 / s);
  }
  if (c[0] == 12345.f) std::puts("");  // keep c alive
  return best;
}

// Examples/s of one thread gathering, per training example, the rows of
// its signs from a hash map (row width `floats`): best of 3 passes.
double GatherPeer(const Dataset& train, int floats) {
  absl::flat_hash_map<uint64_t, uint32_t> index;
  for (uint64_t s : train.signs) index.try_emplace(s, index.size());
  std::vector<float> rows(index.size() * floats, 0.5f);
  double best = 0, sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (uint64_t s : train.signs) {
      const float* row = &rows[size_t{index.find(s)->second} * floats];
      for (int d = 0; d < floats; ++d) sink += row[d];
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    best = std::max(best, train.size() / secs);
  }
  if (sink == 12345) std::puts("");  // keeps the sums alive
  return best;
}

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

int Main(int argc, char** argv) {
  auto flags = Flags::Parse(
      argc, argv, 1,
      {"data",  "format",     "model",      "holdout", "epochs",   "threads",
       "batch", "dim",        "hidden",     "cross",   "lr",       "dense_lr",
       "l2",    "init",       "seed",       "gemm",    "dense_l2", "min_count",
       "rule",  "l1",         "test_first", "int",     "gather",   "init_acc",
       "empty", "row_format", "rounding",   "emb_acc"});
  if (!flags.ok() || !flags->Has("data")) {
    std::fprintf(stderr, "usage: model_train_bench --data=FILE ...\n");
    return 2;
  }
  const Flags& f = *flags;
  LoadOptions load;
  load.parse.format = f.Get("format", "criteo") == "avazu"
                          ? DataFileFormat::kAvazu
                          : DataFileFormat::kCriteo;
  const std::string ints = f.Get("int", "buckets");
  load.parse.int_buckets = ints != "log";
  load.parse.int_log_dense = ints == "log" || ints == "both";
  load.parse.empty_field_signs = f.GetBool("empty");
  // The test set is the file's last `holdout` lines (or, with --test_first,
  // its first: a second split to check the tail is not unusual).
  const double holdout = Num(f, "holdout", 0.1);
  const bool first = f.GetBool("test_first");
  load.begin_fraction = first ? holdout : 0;
  load.end_fraction = first ? 1 : 1 - holdout;
  auto train = LoadDataset(f.Get("data"), load);
  load.begin_fraction = first ? 0 : 1 - holdout;
  load.end_fraction = first ? holdout : 1;
  auto test = LoadDataset(f.Get("data"), load);
  if (!train.ok() || !test.ok()) {
    std::fprintf(
        stderr, "%s\n",
        std::string((train.ok() ? test : train).status().message()).c_str());
    return 1;
  }
  const int min_count = Num(f, "min_count", 0);
  if (min_count > 1) MergeRareSigns(min_count, &*train, {&*test});
  LocalTrainOptions o;
  if (!ParseKind(f.Get("model", "deepfm"), &o.model.kind)) {
    std::fprintf(stderr, "--model: lr fm dnn wide_deep deepfm dcn_v2\n");
    return 2;
  }
  o.model.fields = FieldsOf(load.parse.format);
  o.model.embedding_dim = Num(f, "dim", 8);
  o.model.hidden.clear();
  for (absl::string_view h :
       absl::StrSplit(f.Get("hidden", "400,400,400"), ',', absl::SkipEmpty())) {
    int v = 0;
    if (absl::SimpleAtoi(h, &v)) o.model.hidden.push_back(v);
  }
  o.model.cross_layers = Num(f, "cross", 3);
  o.model.dense_inputs = train->dense_dim;
  o.model.seed = Num(f, "seed", 1);
  o.table.learning_rate = Num(f, "lr", 0.05);
  o.table.l2 = Num(f, "l2", 0);
  o.table.l1 = Num(f, "l1", 0);
  const std::string rule = f.Get("rule", "adagrad");
  o.table.rule = rule == "adam"   ? OptimizerRule::kAdam
                 : rule == "ftrl" ? OptimizerRule::kFtrl
                 : rule == "sgd"  ? OptimizerRule::kSgd
                                  : OptimizerRule::kAdagrad;
  const std::optional<RowFormat> format =
      ParseRowFormat(f.Get("row_format", "fp32"));
  if (!format.has_value()) {
    std::fprintf(stderr, "--row_format=fp32|fp16|int8\n");
    std::exit(2);
  }
  o.table.row_format = *format;
  o.table.rounding = f.Get("rounding", "stochastic") == "nearest"
                         ? Rounding::kNearest
                         : Rounding::kStochastic;
  o.table.init_range = Num(f, "init", 0.01);
  o.table.initial_accumulator = Num(f, "init_acc", 0.01);
  // v's start as a job maps it (sparse_table/job_options.h): w's for DNN,
  // whose embeddings are its only sparse signal, 1000 otherwise.
  o.table.embedding_initial_accumulator =
      Num(f, "emb_acc",
          o.model.kind == CtrKind::kDnn ? o.table.initial_accumulator
                                        : kEmbeddingInitialAccumulator);
  o.dense.learning_rate = Num(f, "dense_lr", 0.001);
  o.dense.l2 = Num(f, "dense_l2", 0);
  o.threads = Num(f, "threads", 2);
  o.batch_size = Num(f, "batch", 1024);
  o.epochs = Num(f, "epochs", 1);
  o.seed = o.model.seed;
  const double cpu0 = CpuSeconds();
  auto r = TrainLocal(*train, &*test, o);
  const double cpu = CpuSeconds() - cpu0;
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  const double macs = CtrModel(o.model).DenseMacsPerExample();
  // Forward, and backward's two products per layer: 3 GEMMs of 2 FLOP/MAC.
  const double flops = 6 * macs * r->examples_per_second;
  std::printf(
      "model=%s train=%zu test=%zu epochs=%d threads=%d test_auc=%.5f "
      "logloss=%.5f copc=%.3f examples_per_s=%.0f cpu_s=%.2f "
      "examples_per_cpu_s=%.0f dense_gflops=%.1f",
      f.Get("model", "deepfm").c_str(), train->size(), test->size(), o.epochs,
      o.threads, r->test.auc, r->test.logloss, r->test.copc,
      r->examples_per_second, cpu, r->examples / cpu, flops / 1e9);
  if (f.GetBool("gather")) {
    const double peer = GatherPeer(*train, o.model.embedding_dim + 1);
    std::printf(" gather_peer_per_core=%.0f x%d=%.0f gather_fraction=%.2f",
                peer, o.threads, o.threads * peer,
                r->examples_per_second / (o.threads * peer));
  }
  if (f.GetBool("gemm")) {
    const double gemm = GemmFlops();
    std::printf(" gemm_gflops_per_core=%.1f x%d=%.1f fraction=%.2f", gemm / 1e9,
                o.threads, o.threads * gemm / 1e9, flops / (o.threads * gemm));
  }
  std::printf("\n");
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) { return sampan::Main(argc, argv); }
