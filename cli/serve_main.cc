// `sampan serve` (cli/cli_util.h): the serving roles as processes.
#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/cli_util.h"
#include "cli/serve.h"
#include "common/config.h"
#include "common/log.h"
#include "serving/lookup_service.h"
#include "serving/serving.h"

namespace sampan {
namespace {

// `sampan serve --role=lookup --shard=i`: lookup shard i of serving.shards.
int ServeLookup(const JobConfig& config, const Flags& flags) {
  const ServingConfig& s = config.serving();
  const int64_t shard = IntFlagOrExit(flags, "shard", -1);
  const uint32_t shards = std::max(1u, s.shards());
  if (shard < 0 || shard >= int64_t(shards)) {
    return ConfigError(absl::InvalidArgumentError(
        absl::StrCat("--shard: expected 0 <= shard < serving.shards (", shards,
                     "), got ", flags.Get("shard", "nothing"))));
  }
  LookupOptions o;
  o.serving = ServingOptionsFromJob(config);
  o.serving.store_dir = absl::StrCat(
      s.store_dir().empty() ? config.output_dir() + "/serving" : s.store_dir(),
      "/lookup-", shard);
  o.shard = uint32_t(shard);
  o.shards = shards;
  LookupService service(o);
  ServeOptions options;
  options.host = config.cluster().host();
  options.port = IntFlagOrExit(flags, "port", 0);
  options.port_file = flags.Get("port_file");
  options.ready_file = flags.Get("ready_file");
  options.credentials = ServerCredentialsOrExit(config);
  options.tick = absl::Milliseconds(200);
  options.ready = [&service] { return service.ready(); };
  options.on_started = [&service](const std::string&) {
    service.Start();
    return absl::OkStatus();
  };
  auto metrics = MaybeStartMetrics(flags, config);
  absl::Status st = ServeUntilSignal(&service, options);
  service.Stop();
  return st.ok() ? 0 : Fail(st);
}

}  // namespace

int ServeMain(int argc, char** argv) {
  BlockTerminationSignals();
  SetLogRole("serve");
  if (argc < 3 || absl::StartsWith(argv[2], "--")) {
    return ConfigError(absl::InvalidArgumentError(
        "usage: sampan serve JOB.yaml [--port=P] [--port_file=F] "
        "[--role=lookup --shard=I | --role=predictor --shards=H:P,...] ..."));
  }
  absl::StatusOr<Flags> flags = Flags::Parse(
      argc, argv, 3,
      {"port", "port_file", "host", "model", "version", "metrics_port",
       "metrics_port_file", "ready_file", "role", "shard", "shards"});
  if (!flags.ok()) return ConfigError(flags.status());
  absl::StatusOr<JobConfig> config = LoadAnyConfig(argv[2]);
  if (!config.ok()) return ConfigError(config.status());
  if (flags->Has("host"))
    config->mutable_cluster()->set_host(flags->Get("host"));
  if (flags->Has("model"))
    config->mutable_serving()->set_model(flags->Get("model"));
  config->mutable_serving()->set_version(
      IntFlagOrExit(*flags, "version", config->serving().version()));
  const std::string role = flags->Get("role", "both");
  if (flags->Has("shards")) {
    ServingConfig* s = config->mutable_serving();
    s->clear_shard_addresses();
    for (absl::string_view a : absl::StrSplit(flags->Get("shards"), ',')) {
      s->add_shard_addresses(std::string(a));
    }
    s->set_shards(s->shard_addresses_size());
  }
  if (absl::Status s = ValidateJobConfig(*config); !s.ok()) {
    return ConfigError(s);
  }
  const ServingConfig& s = config->serving();
  if (role == "lookup") return ServeLookup(*config, *flags);
  if (role != "predictor" && role != "both") {
    return ConfigError(absl::InvalidArgumentError(absl::StrCat(
        "--role: expected both, lookup or predictor, got \"", role, "\"")));
  }
  if (role == "both" && s.shards() > 1) {
    return ConfigError(absl::InvalidArgumentError(absl::StrCat(
        "serving.shards: ", s.shards(),
        " lookup shards are served by `--role=lookup --shard=I` processes and "
        "`--role=predictor` front ends; one process serves both roles only "
        "with shards 0 or 1")));
  }
  if (role == "predictor" && s.shard_addresses_size() == 0) {
    return ConfigError(absl::InvalidArgumentError(
        "--role=predictor needs the lookup shards' addresses: "
        "serving.shard_addresses or --shards=H:P,..."));
  }
  ServingOptions serving = ServingOptionsFromJob(*config);
  if (role == "both") serving.shard_addresses.clear();
  if (!serving.shard_addresses.empty()) {
    serving.shard_credentials = ChannelCredentialsOrExit(*config);
  }
  PredictService service(serving);
  ServeOptions options;
  options.host = config->cluster().host();
  options.port = IntFlagOrExit(*flags, "port", config->serving().port());
  options.port_file = flags->Get("port_file");
  options.ready_file = flags->Get("ready_file");
  options.credentials = ServerCredentialsOrExit(*config);
  options.tick = absl::Milliseconds(200);
  // Handler threads outlive their calls, and with them each thread's
  // scoring scratch (serving/request_batch.cc); gRPC's default of 2 made
  // every call beyond two concurrent ones start a thread (bench/RESULTS.md).
  options.max_idle_threads = 64;
  options.ready = [&service] { return service.ready(); };
  options.on_started = [&service](const std::string&) {
    service.Start();
    return absl::OkStatus();
  };
  auto metrics = MaybeStartMetrics(*flags, *config);
  absl::Status st = ServeUntilSignal(&service, options);
  service.Stop();
  return st.ok() ? 0 : Fail(st);
}

}  // namespace sampan
