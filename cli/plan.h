// `sampan plan`: how many machines a job needs, from figures measured on
// this project's benchmark machine (bench/RESULTS.md), each number of the
// plan naming the figure it comes from.
//
// A plan sizes the pserver fleet by the largest of four needs: RAM for the
// hot tier (a share of the rows in memory, the rest in RocksDB), disk for
// every row, CPU for the pull and push keys per second the wanted
// examples/s bring, and network for their bytes; and the trainers by the
// CPU the model and the PS client take per example. It prints RAM, disk,
// network and cores per node, the expected pull latency and what binds.
//
// A fleet check predicts what bench/ps_load.sh measures: P pservers and C
// load clients sharing N cores on one machine (Zipf batches of 4,096 keys,
// dim 16), so the model behind the plan is compared with runs
// (docs/capacity.md).
//
// Everything here is a pure function of its inputs; nothing is measured at
// run time.
#ifndef SAMPAN_CLI_PLAN_H_
#define SAMPAN_CLI_PLAN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/row_format.h"

namespace sampan {

// A figure measured on the benchmark machine (2 cores, bench/RESULTS.md).
struct Figure {
  const char* name;
  double value;
  const char* unit;
  const char* source;  // the RESULTS.md row: date, what, command
};

// The figures a plan is computed from, in the order docs/capacity.md lists
// them.
const std::vector<Figure>& PlanFigures();

struct PlanInput {
  double rows = 0;  // embedding rows (or parameters / (dim + 1))
  int dim = 16;
  // table.row_format: how many bytes v takes (common/row_format.h).
  RowFormat row_format = RowFormat::kFp32;
  enum Model { kFm, kDeepFm } model = kFm;
  double examples_per_second = 0;
  int batch_size = 1024;
  double keys_per_example = 39;
  // Share of a batch's keys that are distinct (what a pull carries).
  double unique_fraction = 0.5;
  // Share of the rows the hot tier (RAM) holds, and of keys it serves.
  double hot_rows = 0.2;
  double hot_hits = 0.9;
  // A node: cores, RAM, disk, network.
  int node_cores = 32;
  double node_ram_gib = 256;
  double node_disk_tib = 4;
  double node_network_gbps = 25;
  // The pull p99 wanted, ms (0: none).
  double pull_p99_ms = 0;
};

struct PlanLine {
  std::string what;
  std::string value;
  std::string from;  // the figures or assumptions it comes from
};

struct Plan {
  int pservers = 0, trainers = 0, shards = 0;
  std::string bound_by;  // "RAM", "disk", "CPU" or "network"
  std::vector<PlanLine> lines;
};

// INVALID_ARGUMENT naming the input for sizes <= 0, shares outside (0, 1],
// and a p99 below the measured floor.
absl::StatusOr<Plan> MakePlan(const PlanInput& input);

// P pservers and C clients of bench/ps_load.sh sharing `cores`: predicted
// keys/s (pull + push) and pull p50/p99 at half load.
struct FleetPrediction {
  double keys_per_second = 0;
  double p50_ms = 0, p99_ms = 0;
  std::string why;
};
absl::StatusOr<FleetPrediction> PredictFleet(int pservers, int clients,
                                             int cores);

std::string FormatPlan(const PlanInput& input, const Plan& plan);

// `sampan plan --rows=N|--parameters=N [--dim=16] --examples_per_second=E
//  [--row_format=FP32|FP16|INT8] [--model=FM|DEEPFM] [--batch_size=B]
//  [--keys_per_example=K] ...`
// or `sampan plan --fleet=P --clients=C --cores=N`. Exit 2 on bad input.
int PlanMain(int argc, char** argv);

}  // namespace sampan

#endif  // SAMPAN_CLI_PLAN_H_
