// Helpers of the serving tests: tiny trained models, versions published
// from them, eval's probabilities, and a PredictService on a real port.
#ifndef SAMPAN_SERVING_SERVING_TESTLIB_H_
#define SAMPAN_SERVING_SERVING_TESTLIB_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proto/job.pb.h"
#include "serving/serving.h"

namespace sampan {
namespace servetest {

// $TEST_TMPDIR.
std::string Tmp();

// Trains a tiny model of `type` with train-local on synthetic data under
// Tmp()/data (generated once); returns its job.
JobConfig TrainTiny(const std::string& name, ModelType type,
                    void (*tweak)(JobConfig*) = nullptr);

// The lines of Tmp()/data/test.tsv.
std::vector<std::string> TestLines();

// Publishes the exported model of `job` as base `version` under `root`
// (default its versions root), every row and dense weight times `scale`.
void PublishScaled(const JobConfig& job, uint64_t version, float scale,
                   std::string root = "");

// Publishes delta `version` on base `base` under `root` (default the job's
// versions root) from the exported model of `job`: every third key's row
// times `scale`, every seventh key deleted (a row of zeros), dense weights
// times `scale`.
void PublishDelta(const JobConfig& job, uint64_t version, uint64_t base,
                  float scale, std::string root = "");

// Flips a byte of `path` at `offset`.
void FlipByte(const std::string& path, long offset);

// Eval's probability of every test line for `model`.
std::vector<float> EvalProbs(const std::string& model);

// Serving options for `model` polled every 20 ms, with small limits.
ServingOptions OptionsFor(const std::string& model);

// A PredictService on a real loopback port.
class Server {
 public:
  explicit Server(const ServingOptions& options);
  ~Server();
  PredictService& service() { return service_; }
  grpc::Status Predict(const serving::PredictRequest& request,
                       serving::PredictResponse* response);

 private:
  PredictService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

// Serves with `options` and asks for every test line, 100 at a time:
// every probability equals eval's of options.model to 1e-6. Twice: with
// scoring_threads 1 and 4 (a pass big enough runs on the workers, split in
// as many parts as ScoringParts gives).
void ExpectServeEqualsEval(const ServingOptions& options);

// The value of the first metric of family `name`; -1 when absent.
double MetricValue(const std::string& name);
// The value of metric `name` with exactly these labels (a histogram's
// sample count); -1 when there is none.
double MetricValue(const std::string& name,
                   const std::map<std::string, std::string>& labels);

// Predict of test lines [begin, begin + n).
grpc::Status PredictLines(Server* server, const std::vector<std::string>& lines,
                          size_t begin, size_t n,
                          serving::PredictResponse* response);

// Clients calling Predict on `server` until `stop`, checking every answer
// against want[version] (eval's probabilities of each version served).
struct LoadResult {
  int calls = 0, failures = 0, mixed = 0;
  std::vector<int> by_version;
};
LoadResult RunLoad(Server* server, const std::vector<std::vector<float>>& want,
                   int clients, const std::atomic<bool>* stop);

}  // namespace servetest
}  // namespace sampan

#endif  // SAMPAN_SERVING_SERVING_TESTLIB_H_
