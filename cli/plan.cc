#include "cli/plan.h"

#include <algorithm>
#include <cmath>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/flags.h"
#include "common/ps_wire.h"
#include "common/row_format.h"

namespace sampan {
namespace {

constexpr int kExitUsage = 2;

// Indexes into PlanFigures().
enum {
  kHotRowBase,
  kHotRowPerDim,
  kDiskRowBase,
  kPserverCpuPerKey,
  kPserverCpuPerRequest,
  kClientCpuPerKey,
  kClientCpuPerRequest,
  kColdReadsPerCore,
  kPullP50,
  kPullP99,
  kFmPerCpuSecond,
  kDeepFmPerCpuSecond,
  kBudgetOverhead,
  kHeartbeatsPerSecond,
  kCompactCpuFactor,
};

// The largest request ps_load.sh measured: a 4,096-key batch to one pserver.
constexpr double kMeasuredKeysPerRequest = 4096;
// Cores a plan fills: half of each node, the load at which the latency
// figures were measured.
constexpr double kCoreShare = 0.5;

double F(int i) { return PlanFigures()[i].value; }
const char* Src(int i) { return PlanFigures()[i].name; }

std::string Human(double v, const char* unit) {
  const char* prefix[] = {"", " k", " M", " G", " T", " P"};
  int k = 0;
  while (std::fabs(v) >= 1000 && k < 5) v /= 1000, ++k;
  return absl::StrFormat("%.3g%s%s", v, prefix[k], unit);
}

std::string Bytes(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int k = 0;
  while (b >= 1024 && k < 5) b /= 1024, ++k;
  return absl::StrFormat("%.3g %s", b, unit[k]);
}

absl::Status Positive(const char* name, double v) {
  if (v > 0 && std::isfinite(v)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("--%s must be a positive number, not %g", name, v));
}

absl::Status Share(const char* name, double v) {
  if (v > 0 && v <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("--%s must be in (0, 1], not %g", name, v));
}

// Pull latency for `keys` keys a request to one pserver: the half-load
// figures, flat over the sizes measured and linear beyond them.
double Latency(int figure, double keys) {
  return F(figure) * std::max(1.0, keys / kMeasuredKeysPerRequest);
}

}  // namespace

const std::vector<Figure>& PlanFigures() {
  static const auto* figures = new std::vector<Figure>{
      {"hot row bytes, fixed part", 43.6, "B",
       "2026-12-01 sparse_table_bench, memory table, FM rows with Adagrad: "
       "75.9 / 108.2 / 301.7 B a row at dim 8 / 16 / 64, fitted as 43.6 + "
       "4.03 x dim (`ROWS=1000000 REPS=3 bench/sparse_table_bench.sh`)"},
      {"hot row bytes per dim", 4.03, "B", "the same fit"},
      {"disk row bytes, fixed part", 36, "B",
       "2026-12-01 sparse_table_bench, RocksDB: 16 M rows at dim 16 took "
       "1.6 GB on disk, 100 B a row = 36 + 4 x dim (the row value is 28 + "
       "4 x dim, the key 8)"},
      {"pserver CPU per key", 0.329, "CPU-us",
       "2026-12-03 bench/ps_load.sh P 2 6 for P = 1, 2, 4 (RocksDB, redo "
       "log; 3 rounds alternated, medians): pservers' CPU per million keys "
       "0.409 / 0.394 / 0.553 s at 4,096 / 2,048 / 1,024 keys a request, "
       "fitted (least squares) as per key + per request"},
      {"pserver CPU per request", 215, "CPU-us", "the same fit"},
      {"client CPU per key", 0.126, "CPU-us",
       "the same runs and fit, clients' CPU (whole: 0.572 / 0.543 / 0.776 "
       "s per million keys)"},
      {"client CPU per request", 91, "CPU-us", "the same fit"},
      {"cold reads per pserver core", 160e3, "rows/s",
       "2026-12-01 sparse_table_bench, dim 16, uniform cold pull with the "
       "table 4x over its budget, one thread"},
      {"pull p50 at half load", 1.91, "ms",
       "2026-12-03 bench/ps_load.sh P 2 6, P = 1, 2, 4: 1.86 / 1.91 / 2.12 "
       "ms at 4,096 / 2,048 / 1,024 keys a request (no trend: taken as "
       "constant up to 4,096 keys, linear beyond)"},
      {"pull p99 at half load", 9.29, "ms",
       "the same runs: 9.29 / 8.23 / 10.6 ms"},
      {"FM examples per trainer CPU-second", 615e3, "examples",
       "2026-12-02 train-local FM, Criteo 137k, 2 threads: 1.23 M "
       "examples/s"},
      {"DeepFM examples per trainer CPU-second", 38.6e3, "examples",
       "2026-12-04 model_train_bench DeepFM dim 8, MLP 3x400, batch 1024, "
       "AVX-512 products (gemm.h); on CPUs without AVX-512, 25.4 k "
       "(SAMPAN_DENSE_ISA=avx2, same runs)"},
      {"pserver RSS per byte of hot tier", 1.25, "x",
       "the table's memory target (RSS within 1.25x its budget), met at "
       "16 M rows and a 400 MB budget: 361 MB (2026-12-01)"},
      {"coordinator heartbeats per second", 8018, "heartbeats/s",
       "2026-12-02 bench/fleet_sim: closed loop against the real "
       "coordinator, 500 pservers + 2,000 trainers simulated"},
      {"compact row CPU per key", 1.18, "x FP32's",
       "2026-12-03 ROW_FORMAT=FP32|INT8 REPS=1 bench/ps_load.sh 2 2 6, 3 "
       "rounds alternated, with compact pulls: pservers' CPU per million "
       "keys 0.672 (INT8) vs 0.568 s (FP32), medians (per round 1.01 / "
       "1.24 / 0.99x): decoding v on a pull and encoding it for the wire, "
       "decoding and encoding it on a push (FP16 taken as INT8)"},
  };
  return *figures;
}

absl::StatusOr<Plan> MakePlan(const PlanInput& in) {
  for (auto [name, v] : {std::pair<const char*, double>{"rows", in.rows},
                         {"dim", in.dim},
                         {"examples_per_second", in.examples_per_second},
                         {"batch_size", in.batch_size},
                         {"keys_per_example", in.keys_per_example},
                         {"node_cores", in.node_cores},
                         {"node_ram_gib", in.node_ram_gib},
                         {"node_disk_tib", in.node_disk_tib},
                         {"node_network_gbps", in.node_network_gbps}}) {
    if (absl::Status s = Positive(name, v); !s.ok()) return s;
  }
  for (auto [name, v] :
       {std::pair<const char*, double>{"unique_fraction", in.unique_fraction},
        {"hot_rows", in.hot_rows},
        {"hot_hits", in.hot_hits}}) {
    if (absl::Status s = Share(name, v); !s.ok()) return s;
  }
  if (in.pull_p99_ms < 0) return Positive("pull_p99_ms", in.pull_p99_ms);
  if (in.pull_p99_ms > 0 && in.pull_p99_ms < F(kPullP99)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--pull_p99_ms=%g is below what any fleet gives: a pull's p99 at half "
        "load is %g ms (%s)",
        in.pull_p99_ms, F(kPullP99), PlanFigures()[kPullP99].source));
  }
  Plan plan;
  auto line = [&](std::string what, std::string value, std::string from) {
    plan.lines.push_back({std::move(what), std::move(value), std::move(from)});
  };
  // v's bytes in the row format; the fits' per-dim figures are FP32's 4 B.
  const double v_bytes = 4.0 * EmbeddingWords(in.row_format, in.dim);
  const double hot_row = F(kHotRowBase) + F(kHotRowPerDim) * v_bytes / 4;
  const double disk_row = F(kDiskRowBase) + v_bytes;
  const double ram = in.rows * in.hot_rows * hot_row * F(kBudgetOverhead);
  // RocksDB's space amplification and a checkpoint's hard-linked files
  // outliving compaction: twice the rows (an assumption, not measured).
  const double disk = 2 * in.rows * disk_row;
  const double pulled = in.examples_per_second * in.keys_per_example *
                        in.unique_fraction;  // and as many pushed
  const double cold = pulled * (1 - in.hot_hits);
  // Cores for the keys, over the fleet, and for the requests, on each
  // pserver: every batch sends each pserver a pull and a push.
  const double batches = in.examples_per_second / in.batch_size;
  const double cpu_per_key =
      F(kPserverCpuPerKey) *
      (in.row_format == RowFormat::kFp32 ? 1.0 : F(kCompactCpuFactor));
  const double key_cores =
      2 * pulled * cpu_per_key / 1e6 + cold / F(kColdReadsPerCore);
  const double request_cores = 2 * batches * F(kPserverCpuPerRequest) / 1e6;
  const double usable_cores = in.node_cores * kCoreShare;
  if (request_cores >= usable_cores) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%.0f batches/s send every pserver %.0f requests/s, %.1f cores of "
        "request handling alone (%s) against %.0f usable cores a node: raise "
        "--batch_size",
        batches, 2 * batches, request_cores, Src(kPserverCpuPerRequest),
        usable_cores));
  }
  // A key and its values, each way: pulled rows in the table's format where
  // it is smaller (common/ps_wire.h), pushed gradients in float32.
  const double pull_bytes =
      8 +
      4.0 * WireRowWords(WirePullFormat(in.row_format, in.dim + 1), in.dim + 1);
  const double push_bytes = 8 + 4.0 * (in.dim + 1);
  const double network_bits = pulled * (pull_bytes + push_bytes) * 8;
  const double node_ram = in.node_ram_gib * (1ull << 30);
  const double node_disk = in.node_disk_tib * (1ull << 40);

  struct Need {
    const char* what;
    double pservers;
  };
  const Need needs[] = {
      {"RAM", ram / (node_ram * 0.9)},  // 10% for the OS and the process
      {"disk", disk / (node_disk * 0.8)},
      {"CPU", key_cores / (usable_cores - request_cores)},
      {"network", network_bits / (in.node_network_gbps * 1e9 * 0.5)},
  };
  const Need* bound = &needs[0];
  for (const Need& n : needs) {
    if (n.pservers > bound->pservers) bound = &n;
  }
  plan.pservers = std::max(1, static_cast<int>(std::ceil(bound->pservers)));
  plan.bound_by = bound->what;
  // Latency: keys per request to one pserver.
  const double batch_keys =
      in.batch_size * in.keys_per_example * in.unique_fraction;
  auto p99 = [&](int p) { return Latency(kPullP99, batch_keys / p); };
  if (in.pull_p99_ms > 0) {
    while (p99(plan.pservers) > in.pull_p99_ms) {
      ++plan.pservers;
      plan.bound_by = "the pull p99 wanted";
    }
  }
  // Shards: 8 a pserver (room to grow the fleet 8x by moves), a power of 2.
  plan.shards = 64;
  while (plan.shards < 8 * plan.pservers) plan.shards *= 2;
  const double model_rate =
      in.model == PlanInput::kFm ? F(kFmPerCpuSecond) : F(kDeepFmPerCpuSecond);
  const double trainer_cores =
      in.examples_per_second / model_rate +
      2 * pulled * F(kClientCpuPerKey) / 1e6 +
      2 * batches * plan.pservers * F(kClientCpuPerRequest) / 1e6;
  plan.trainers = std::max(
      1, static_cast<int>(std::ceil(trainer_cores / (in.node_cores * 0.8))));

  const int P = plan.pservers;
  line("parameters", Human(in.rows * (in.dim + 1), ""),
       absl::StrFormat("%s rows x (dim %d + 1)", Human(in.rows, ""), in.dim));
  line("pservers", absl::StrCat(P, " (bound by ", plan.bound_by, ")"),
       absl::StrFormat("the largest of: RAM %.1f, disk %.1f, CPU %.1f, "
                       "network %.1f nodes",
                       needs[0].pservers, needs[1].pservers, needs[2].pservers,
                       needs[3].pservers));
  line("trainers", absl::StrCat(plan.trainers),
       absl::StrFormat("%.0f cores at 80%% of %d a node: the model (%s) and "
                       "the PS client (%s)",
                       trainer_cores, in.node_cores,
                       Src(in.model == PlanInput::kFm ? kFmPerCpuSecond
                                                      : kDeepFmPerCpuSecond),
                       absl::StrCat(Src(kClientCpuPerKey), ", ",
                                    Src(kClientCpuPerRequest))));
  line("table.num_shards", absl::StrCat(plan.shards),
       "8 a pserver, a power of 2 (room to grow the fleet by moving shards)");
  line("hot tier a pserver", Bytes(ram / P),
       absl::StrFormat("%.0f%% of the rows x %.0f B (%s, %s) x %.2f (%s)",
                       100 * in.hot_rows, hot_row, Src(kHotRowBase),
                       Src(kHotRowPerDim), F(kBudgetOverhead),
                       Src(kBudgetOverhead)));
  line("disk a pserver", Bytes(disk / P),
       absl::StrFormat("every row x %.0f B (%s) x 2 (space amplification "
                       "and checkpoints: assumed)",
                       disk_row, Src(kDiskRowBase)));
  line("keys a pserver",
       absl::StrCat(Human(2 * pulled / P, " keys/s"), " (",
                    Human(cold / P, " cold reads/s"), ")"),
       absl::StrFormat("%s examples/s x %g keys x %g distinct, pulled and "
                       "pushed; %.0f%% of pulls miss the hot tier",
                       Human(in.examples_per_second, ""), in.keys_per_example,
                       in.unique_fraction, 100 * (1 - in.hot_hits)));
  line("cores a pserver",
       absl::StrFormat("%.1f of %d", key_cores / P + request_cores,
                       in.node_cores),
       absl::StrFormat("%s%s, %s (%.0f requests/s), %s; filled to %.0f%%",
                       Src(kPserverCpuPerKey),
                       in.row_format == RowFormat::kFp32
                           ? ""
                           : absl::StrCat(" x ", Src(kCompactCpuFactor)),
                       Src(kPserverCpuPerRequest), 2 * batches,
                       Src(kColdReadsPerCore), 100 * kCoreShare));
  line("network a pserver", Human(network_bits / P, "bit/s"),
       absl::StrFormat("%.0f B a key pulled, %.0f B pushed (8 B key + 4 B "
                       "x (dim + 1) of float32%s)",
                       pull_bytes, push_bytes,
                       in.row_format == RowFormat::kFp32
                           ? ""
                           : "; pulled v in the row format"));
  line(
      "pull latency",
      absl::StrFormat("p50 %.1f ms, p99 %.1f ms",
                      Latency(kPullP50, batch_keys / P), p99(P)),
      absl::StrFormat("%.0f keys a request to each pserver; %s, %s (flat up to "
                      "4,096 keys, linear beyond)",
                      batch_keys / P, Src(kPullP50), Src(kPullP99)));
  const double heartbeats = P + plan.trainers;
  line("coordinator",
       absl::StrFormat("%.0f heartbeats/s, %.0f%% of capacity", heartbeats,
                       100 * heartbeats / F(kHeartbeatsPerSecond)),
       Src(kHeartbeatsPerSecond));
  return plan;
}

absl::StatusOr<FleetPrediction> PredictFleet(int pservers, int clients,
                                             int cores) {
  for (auto [name, v] : {std::pair<const char*, double>{"fleet", pservers},
                         {"clients", clients},
                         {"cores", cores}}) {
    if (absl::Status s = Positive(name, v); !s.ok()) return s;
  }
  FleetPrediction p;
  // ps_load.sh's batch of 4,096 keys split over the pservers; every core
  // busy with the clients' and the pservers' CPU per key and per request.
  const double keys = 4096.0 / pservers;
  const double per_key =
      F(kPserverCpuPerKey) + F(kClientCpuPerKey) +
      (F(kPserverCpuPerRequest) + F(kClientCpuPerRequest)) / keys;
  p.keys_per_second = cores / (per_key / 1e6);
  p.p50_ms = Latency(kPullP50, keys);
  p.p99_ms = Latency(kPullP99, keys);
  p.why = absl::StrFormat(
      "%d cores / (%s, %s, %s, %s at %.0f keys a request); latency: %s, "
      "%s",
      cores, Src(kPserverCpuPerKey), Src(kPserverCpuPerRequest),
      Src(kClientCpuPerKey), Src(kClientCpuPerRequest), keys, Src(kPullP50),
      Src(kPullP99));
  return p;
}

std::string FormatPlan(const PlanInput& in, const Plan& plan) {
  std::string out = absl::StrFormat(
      "plan for %s rows of dim %d (%s), %s, %s examples/s (batch %d, %g keys "
      "an example); nodes of %d cores, %g GiB RAM, %g TiB disk, %g Gbit/s\n\n",
      Human(in.rows, ""), in.dim, RowFormatName(in.row_format),
      in.model == PlanInput::kFm ? "FM" : "DeepFM",
      Human(in.examples_per_second, ""), in.batch_size, in.keys_per_example,
      in.node_cores, in.node_ram_gib, in.node_disk_tib, in.node_network_gbps);
  for (const PlanLine& l : plan.lines) {
    absl::StrAppendFormat(&out, "%-20s %-28s from: %s\n", l.what, l.value,
                          l.from);
  }
  out += "\nfigures (measured on a 2-core machine, bench/RESULTS.md):\n";
  for (const Figure& f : PlanFigures()) {
    absl::StrAppendFormat(&out, "  %s = %g %s: %s\n", f.name, f.value, f.unit,
                          f.source);
  }
  return out;
}

int PlanMain(int argc, char** argv) {
  absl::StatusOr<Flags> flags =
      Flags::Parse(argc, argv, 2,
                   {"rows", "parameters", "dim", "model", "examples_per_second",
                    "batch_size", "keys_per_example", "unique_fraction",
                    "hot_rows", "hot_hits", "node_cores", "node_ram_gib",
                    "node_disk_tib", "node_network_gbps", "pull_p99_ms",
                    "fleet", "clients", "cores", "row_format"});
  auto fail = [](const absl::Status& s) {
    std::cerr << "error: sampan plan: " << s.message() << "\n";
    return kExitUsage;
  };
  if (!flags.ok()) return fail(flags.status());
  absl::Status bad;
  auto number = [&](const char* name, double fallback) {
    if (!flags->Has(name)) return fallback;
    double v = 0;
    if (!absl::SimpleAtod(flags->Get(name), &v) && bad.ok()) {
      bad = absl::InvalidArgumentError(
          absl::StrCat("--", name, "=", flags->Get(name), " is not a number"));
    }
    return v;
  };
  if (flags->Has("fleet")) {
    const double p = number("fleet", 0), c = number("clients", 2),
                 n = number("cores", 2);
    if (!bad.ok()) return fail(bad);
    absl::StatusOr<FleetPrediction> f = PredictFleet(p, c, n);
    if (!f.ok()) return fail(f.status());
    std::cout << absl::StrFormat(
        "bench/ps_load.sh %g %g on %g cores: %s (pull + push); half load pull "
        "p50 %.2f ms, p99 %.2f ms\nfrom: %s\n",
        p, c, n, Human(f->keys_per_second, " keys/s"), f->p50_ms, f->p99_ms,
        f->why);
    return 0;
  }
  PlanInput in;
  in.dim = number("dim", in.dim);
  in.rows = flags->Has("parameters") ? number("parameters", 0) / (in.dim + 1)
                                     : number("rows", 0);
  const std::string format = flags->Get("row_format", "FP32");
  const std::optional<RowFormat> parsed = ParseRowFormat(format);
  if (!parsed.has_value()) {
    return fail(absl::InvalidArgumentError(
        absl::StrCat("--row_format=", format, ": FP32, FP16 or INT8")));
  }
  in.row_format = *parsed;
  const std::string model = flags->Get("model", "FM");
  if (model == "DEEPFM") {
    in.model = PlanInput::kDeepFm;
  } else if (model != "FM") {
    return fail(absl::InvalidArgumentError(
        absl::StrCat("--model=", model, ": FM or DEEPFM")));
  }
  in.examples_per_second = number("examples_per_second", 0);
  in.batch_size = number("batch_size", in.batch_size);
  in.keys_per_example = number("keys_per_example", in.keys_per_example);
  in.unique_fraction = number("unique_fraction", in.unique_fraction);
  in.hot_rows = number("hot_rows", in.hot_rows);
  in.hot_hits = number("hot_hits", in.hot_hits);
  in.node_cores = number("node_cores", in.node_cores);
  in.node_ram_gib = number("node_ram_gib", in.node_ram_gib);
  in.node_disk_tib = number("node_disk_tib", in.node_disk_tib);
  in.node_network_gbps = number("node_network_gbps", in.node_network_gbps);
  in.pull_p99_ms = number("pull_p99_ms", 0);
  if (!bad.ok()) return fail(bad);
  absl::StatusOr<Plan> plan = MakePlan(in);
  if (!plan.ok()) return fail(plan.status());
  std::cout << FormatPlan(in, *plan);
  return 0;
}

}  // namespace sampan
