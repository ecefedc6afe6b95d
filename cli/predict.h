// `sampan predict JOB.yaml DATA_FILE`: scores a data file through a running
// `sampan serve` (the job's, or any address), as a user or a script would
// query serving: the lines go in Predict calls of up to `batch` examples,
// and one probability per line comes back in order.
//
// Promises: every call carries the job's credentials (TLS and token) and a
// deadline of cluster.rpc_deadline_seconds; an error names the address, the
// file and the line range the failed call carried, and nothing more is
// sent after it. The output holds the probabilities of lines answered so
// far only, never a placeholder for an unanswered one.
#ifndef SAMPAN_CLI_PREDICT_H_
#define SAMPAN_CLI_PREDICT_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"

namespace sampan {

struct PredictFileOptions {
  // HOST:PORT of the Predictor; empty = the job's own: cluster.host and the
  // port `sampan run` wrote to <output_dir>/serve.port (serving.enabled).
  std::string address;
  // Lines of the job's data.format, one example each (plain text).
  std::string data_file;
  // Examples per Predict call, at most serving.max_examples_per_request.
  uint32_t batch = 100;
  // Ask for this version only (FAILED_PRECONDITION when another is served);
  // 0 = whichever is served.
  uint64_t version = 0;
};

struct PredictFileResult {
  std::string address;
  uint64_t examples = 0;
  // Examples answered by each version (a swap between calls shows as two).
  std::map<uint64_t, uint64_t> by_version;
};

// Writes "<probability>\t<version>\n" per line of the file to `out`.
absl::StatusOr<PredictFileResult> PredictFile(const JobConfig& config,
                                              const PredictFileOptions& options,
                                              std::ostream* out);

}  // namespace sampan

#endif  // SAMPAN_CLI_PREDICT_H_
