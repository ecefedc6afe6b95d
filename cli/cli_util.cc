#include "cli/cli_util.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/config.h"
#include "common/file_digest.h"
#include "common/log.h"
#include "common/security.h"
#include "google/protobuf/text_format.h"

namespace sampan {

Invocation ParseOrExit(int argc, char** argv, std::set<std::string> known) {
  known.insert("config");
  absl::StatusOr<Flags> flags = Flags::Parse(argc, argv, 2, known);
  if (!flags.ok()) std::exit(ConfigError(flags.status()));
  if (!flags->Has("config")) {
    std::exit(ConfigError(absl::InvalidArgumentError("--config is required")));
  }
  absl::StatusOr<JobConfig> config = LoadAnyConfig(flags->Get("config"));
  if (!config.ok()) std::exit(ConfigError(config.status()));
  // --host replaces cluster.host everywhere (binding, advertising, the
  // loopback check of the security settings): on Kubernetes each pod uses
  // its own IP, $(POD_IP), while all share one config.
  if (flags->Has("host")) {
    config->mutable_cluster()->set_host(flags->Get("host"));
  }
  return {*flags, *config};
}

int ConfigError(const absl::Status& status) {
  std::cerr << "error: " << status.message() << "\n";
  return kExitConfigError;
}

// YAML for people; the text proto that `sampan run` resolves for children.
absl::StatusOr<JobConfig> LoadAnyConfig(const std::string& path) {
  if (!absl::EndsWith(path, ".pbtxt")) return LoadJobConfig(path);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  JobConfig config;
  if (!google::protobuf::TextFormat::ParseFromString(text.str(), &config)) {
    return absl::InvalidArgumentError(path + ": not a valid JobConfig");
  }
  absl::Status s = ValidateJobConfig(config);
  if (!s.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  return config;
}

int64_t IntFlagOrExit(const Flags& flags, const std::string& name,
                      int64_t def) {
  absl::StatusOr<int64_t> v = flags.GetInt(name, def);
  if (!v.ok()) std::exit(ConfigError(v.status()));
  return *v;
}

int Fail(const absl::Status& status) {
  SAMPAN_LOG(ERROR) << status.message();
  return 1;
}

// Server and channel credentials from the job's cluster.security; a bad
// setting is a config error (exit status 2) before anything starts.
std::shared_ptr<grpc::ServerCredentials> ServerCredentialsOrExit(
    const JobConfig& config) {
  auto creds = MakeServerCredentials(SecurityOptionsFromJob(config),
                                     config.cluster().host());
  if (!creds.ok()) std::exit(ConfigError(creds.status()));
  return *creds;
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsOrExit(
    const JobConfig& config) {
  auto creds = MakeChannelCredentials(SecurityOptionsFromJob(config));
  if (!creds.ok()) std::exit(ConfigError(creds.status()));
  return *creds;
}

// Writes `port` to `path` atomically (by rename): readers never see a
// partial number.
void WritePortFile(const std::string& path, int port) {
  if (absl::Status s = WriteFileDurably(path, absl::StrCat(port, "\n"));
      !s.ok()) {
    SAMPAN_LOG(WARNING) << s.message();
  }
}

std::unique_ptr<MetricsServer> MaybeStartMetrics(const Flags& flags,
                                                 const JobConfig& config,
                                                 std::vector<HttpPage> pages) {
  if (!flags.Has("metrics_port")) return nullptr;
  MetricsServerOptions options;
  options.host = config.cluster().host();
  options.port = IntFlagOrExit(flags, "metrics_port", 0);
  options.security = SecurityOptionsFromJob(config);
  options.pages = std::move(pages);
  auto server = MetricsServer::Start(options);
  if (!server.ok()) {
    if (absl::IsFailedPrecondition(server.status()) ||
        absl::IsInvalidArgument(server.status())) {
      std::exit(ConfigError(server.status()));
    }
    SAMPAN_LOG(ERROR) << server.status().message();
    std::exit(1);
  }
  SAMPAN_LOG(INFO) << "metrics on " << (*server)->scheme() << "://"
                   << options.host << ":" << (*server)->port() << "/metrics";
  if (flags.Has("metrics_port_file")) {
    WritePortFile(flags.Get("metrics_port_file"), (*server)->port());
  }
  return std::move(*server);
}

}  // namespace sampan
