// What every `sampan` subcommand shares: config errors as exit status 2,
// loading a job config, integer flags, credentials and the metrics server;
// and the subcommands that live in their own files.
#ifndef SAMPAN_CLI_CLI_UTIL_H_
#define SAMPAN_CLI_CLI_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/flags.h"
#include "common/metrics.h"
#include "proto/job.pb.h"

namespace sampan {

// The exit status of a bad config or command line.
inline constexpr int kExitConfigError = 2;

// Prints "error: <message>" and returns kExitConfigError.
int ConfigError(const absl::Status& status);

// YAML for people; the text proto that `sampan run` resolves for children.
// Validated either way.
absl::StatusOr<JobConfig> LoadAnyConfig(const std::string& path);

// A role's command line: --config (required) and the `known` flags, the
// job config loaded and validated; --host replaces cluster.host. Exits with
// status 2 on any error.
struct Invocation {
  Flags flags;
  JobConfig config;
};
Invocation ParseOrExit(int argc, char** argv, std::set<std::string> known);

// Flag `name` as an integer (`def` when absent); exits with status 2 when
// it is not one.
int64_t IntFlagOrExit(const Flags& flags, const std::string& name, int64_t def);

// Logs `status` and returns 1.
int Fail(const absl::Status& status);

// Server and channel credentials from the job's cluster.security; a bad
// setting is a config error (exit status 2) before anything starts.
std::shared_ptr<grpc::ServerCredentials> ServerCredentialsOrExit(
    const JobConfig& config);
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsOrExit(
    const JobConfig& config);

// Writes `port` to `path` atomically (by rename).
void WritePortFile(const std::string& path, int port);

// Serves this process's metrics on cluster.host when --metrics_port is
// given (0 = any), under the job's cluster.security (HTTPS and the token
// when secured; common/metrics.h), writing the bound port to
// --metrics_port_file when given; null otherwise. A setting the listen
// policy refuses exits with status 2. `pages` are served beside /metrics.
std::unique_ptr<MetricsServer> MaybeStartMetrics(
    const Flags& flags, const JobConfig& config,
    std::vector<HttpPage> pages = {});

// `sampan serve`: one process with every row (the default), a lookup shard
// (--role=lookup --shard=I) or a predictor front end (--role=predictor).
int ServeMain(int argc, char** argv);

// The job's roles as processes (cli/roles_main.cc), started by `sampan run`
// and by the Kubernetes pods: `sampan coordinator`, `sampan pserver
// --index=I`, `sampan trainer --rank=R`.
int CoordinatorMain(int argc, char** argv);
int PserverMain(int argc, char** argv);
int TrainerMain(int argc, char** argv);

}  // namespace sampan

#endif  // SAMPAN_CLI_CLI_UTIL_H_
