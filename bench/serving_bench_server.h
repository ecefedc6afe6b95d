// The `sampan serve` processes of bench/serving_bench.cc, on loopback ports:
// one process holding every row, or lookup shards and a predictor front end
// (serving/lookup_service.h), each with its log and port file in a
// directory; and the client side of their Predict calls.
#ifndef SAMPAN_BENCH_SERVING_BENCH_SERVER_H_
#define SAMPAN_BENCH_SERVING_BENCH_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "proto/job.pb.h"
#include "proto/serving.grpc.pb.h"

namespace sampan {

struct ServeCommand {
  std::string sampan = "bazel-bin/cli/sampan";
  // Words run before the command line ("perf record -g -o F --").
  std::string wrap;
  // Where the job files, logs and port files go.
  std::string dir;
};

// Servers started for one configuration: every process (the one answering
// Predict last) and its host:port; the port of that last one's /metrics.
struct Servers {
  std::vector<pid_t> pids;
  std::string target;
  int metrics_port = 0;
};

// `sampan serve` on `config` (written to dir/<name>.pbtxt), one process.
// Returns once Predict answers (up to 10 minutes: a large model loads
// first); exits naming its log when it does not.
Servers StartOneProcess(const ServeCommand& cmd, const JobConfig& config,
                        const std::string& name);

// serving.shards lookup shards of `config` (`--role=lookup --shard=i`,
// stores under its serving.store_dir) and a predictor front end
// (`--role=predictor --shards=...`), started and answering as above.
Servers StartSharded(const ServeCommand& cmd, const JobConfig& config,
                     const std::string& name);

// The Predict latencies the server counted itself
// (sampan_serving_request_duration_seconds): each bucket's upper bound in
// seconds and its cumulative count; empty when /metrics does not answer.
using HistogramBuckets = std::vector<std::pair<double, double>>;
HistogramBuckets ScrapeServerLatency(const Servers& servers);

// From the buckets' growth between two scrapes: the share of calls slower
// than `ms`, and the `q` quantile in ms (interpolated within its bucket);
// -1 for both when no call was counted.
struct ServerTail {
  double over = -1, quantile_ms = -1;
};
ServerTail TailBetween(const HistogramBuckets& before,
                       const HistogramBuckets& after, double ms, double q);

// SIGTERM to each, then waits for them.
void StopServers(const Servers& servers);

// CPU seconds of process `pid` (utime + stime from /proc); 0 without one.
double ProcessCpu(pid_t pid);

// A stub with a connection of its own.
std::unique_ptr<serving::Predictor::Stub> NewStub(const std::string& target);

// One Predict with a 5 s deadline; false with *error set when it fails.
bool Call(serving::Predictor::Stub* stub, const serving::PredictRequest& req,
          serving::PredictResponse* resp, std::string* error);

}  // namespace sampan

#endif  // SAMPAN_BENCH_SERVING_BENCH_SERVER_H_
