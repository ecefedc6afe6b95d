#include "cli/predict.h"

#include <grpcpp/grpcpp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/security.h"
#include "proto/serving.grpc.pb.h"

namespace sampan {
namespace {

absl::StatusOr<std::string> JobServingAddress(const JobConfig& config) {
  const std::string path = absl::StrCat(config.output_dir(), "/serve.port");
  std::ifstream in(path);
  int port = 0;
  if (!(in >> port) || port <= 0) {
    return absl::NotFoundError(absl::StrCat(
        "no serving address: ", path,
        " names no port (is `sampan run` running the job with "
        "serving.enabled?); pass --address=HOST:PORT of a `sampan serve`"));
  }
  return absl::StrCat(config.cluster().host(), ":", port);
}

}  // namespace

absl::StatusOr<PredictFileResult> PredictFile(const JobConfig& config,
                                              const PredictFileOptions& o,
                                              std::ostream* out) {
  PredictFileResult result;
  if (o.address.empty()) {
    absl::StatusOr<std::string> address = JobServingAddress(config);
    if (!address.ok()) return address.status();
    result.address = *address;
  } else {
    result.address = o.address;
  }
  if (o.batch == 0) return absl::InvalidArgumentError("--batch must be >= 1");
  std::ifstream in(o.data_file);
  if (!in)
    return absl::NotFoundError(absl::StrCat("cannot read ", o.data_file));
  auto credentials = MakeChannelCredentials(SecurityOptionsFromJob(config));
  if (!credentials.ok()) return credentials.status();
  std::unique_ptr<serving::Predictor::Stub> stub = serving::Predictor::NewStub(
      grpc::CreateChannel(result.address, *credentials));
  const absl::Duration deadline =
      absl::Seconds(config.cluster().rpc_deadline_seconds());
  uint64_t first_line = 1;
  std::string line;
  bool more = true;
  while (more) {
    serving::PredictRequest request;
    request.set_version(o.version);
    while (request.lines_size() < int(o.batch) &&
           (more = bool(std::getline(in, line)))) {
      request.add_lines(line);
    }
    if (request.lines_size() == 0) break;
    const uint64_t last_line = first_line + request.lines_size() - 1;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    serving::PredictResponse response;
    const grpc::Status s = stub->Predict(&context, request, &response);
    if (!s.ok()) {
      return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                          absl::StrCat("Predict at ", result.address, " for ",
                                       o.data_file, " lines ", first_line, "-",
                                       last_line, ": ", s.error_message()));
    }
    if (response.probabilities_size() != request.lines_size()) {
      return absl::DataLossError(
          absl::StrCat("Predict at ", result.address, " answered ",
                       response.probabilities_size(), " probabilities for ",
                       request.lines_size(), " lines (", o.data_file, " lines ",
                       first_line, "-", last_line, ")"));
    }
    for (float p : response.probabilities()) {
      *out << absl::StrFormat("%.6f\t%d\n", p, response.version());
    }
    result.examples += request.lines_size();
    result.by_version[response.version()] += request.lines_size();
    first_line = last_line + 1;
  }
  return result;
}

}  // namespace sampan
