// The job's roles as processes (cli/cli_util.h): the coordinator, a
// pserver and a trainer, as `sampan run` and the Kubernetes pods start them.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/cli_util.h"
#include "cli/job_metrics.h"
#include "cli/job_page.h"
#include "cli/launcher.h"
#include "cli/serve.h"
#include "common/config.h"
#include "common/file_digest.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/shard_map.h"
#include "coordinator/checkpoint_store.h"
#include "coordinator/client.h"
#include "coordinator/coordinator.h"
#include "pserver/pserver.h"
#include "sparse_table/job_options.h"
#include "trainer/trainer.h"
#include "trainer/warm_start.h"

namespace sampan {
namespace {

// A coordinator that a newer one replaced exits with this status.
constexpr int kSupersededExitCode = 3;

// A coordinator that a newer one replaced (coordinator/coordinator.h) has
// nothing left to do: it exits, and whoever restarts it gets a new epoch.
void ExitIfSuperseded(CoordinatorService& service) {
  if (!service.CheckSuperseded()) return;
  SAMPAN_LOG(ERROR) << "coordinator epoch " << service.epoch()
                    << " was replaced by a newer coordinator; exiting";
  std::_Exit(kSupersededExitCode);
}

}  // namespace

int CoordinatorMain(int argc, char** argv) {
  BlockTerminationSignals();
  SetLogRole("coordinator");
  Invocation inv =
      ParseOrExit(argc, argv,
                  {"port", "port_file", "host", "advertise", "metrics_port",
                   "metrics_port_file", "launch_id"});
  // `sampan run` names its launch, so that a coordinator it restarts
  // resumes the rendezvous state of this launch (coordinator/coordinator.h).
  auto service = NewCoordinatorService(inv.config, inv.flags.Get("launch_id"));
  ServeOptions options;
  options.host = inv.config.cluster().host();
  options.advertise = inv.flags.Get("advertise");
  options.port =
      IntFlagOrExit(inv.flags, "port", inv.config.cluster().coordinator_port());
  options.port_file = inv.flags.Get("port_file");
  options.credentials = ServerCredentialsOrExit(inv.config);
  // The live job page (cli/job_page.h) beside /metrics: a shell without
  // the job's data, and the body it fetches under the token.
  JobPage page({.job_name = inv.config.name()});
  auto metrics = MaybeStartMetrics(
      inv.flags, inv.config,
      {{.path = "/job",
        .render = [&page] { return page.Shell(); },
        .without_token = true},
       {.path = "/job/body", .render = [&page] { return page.Body(); }}});
  // Job-level metrics and the page from the heartbeats, read back on every
  // tick through our own JobStatus RPC, which has a deadline.
  std::unique_ptr<JobMetrics> job_metrics;
  std::unique_ptr<CoordinatorClient> self;
  if (metrics != nullptr) {
    job_metrics = std::make_unique<JobMetrics>();
    options.on_started = [&](const std::string& address) {
      // Ourselves at the address we bound, under the name we advertise.
      const std::string port = address.substr(address.rfind(':') + 1);
      self = std::make_unique<CoordinatorClient>(
          absl::StrCat(options.host, ":", port), absl::Seconds(2),
          absl::Seconds(2), ChannelCredentialsOrExit(inv.config),
          options.advertise);
      return absl::OkStatus();
    };
    options.on_tick = [&] {
      ExitIfSuperseded(*service);
      if (self == nullptr) return;
      absl::StatusOr<coord::JobStatusResponse> status = self->JobStatus();
      if (!status.ok()) return;
      job_metrics->Update(*status, absl::Now());
      page.Update(*status, absl::Now());
    };
  }
  if (!options.on_tick) options.on_tick = [&] { ExitIfSuperseded(*service); };
  absl::Status s = ServeUntilSignal(service.get(), options);
  if (metrics != nullptr && !inv.config.output_dir().empty()) {
    // The page as the job ended, beside its logs: with the final heartbeats
    // (the server is down; the handler is called directly).
    grpc::ServerContext context;
    const coord::JobStatusRequest request;
    coord::JobStatusResponse last;
    if (service->JobStatus(&context, &request, &last).ok()) {
      page.Update(last, absl::Now());
    }
    const std::string path = inv.config.output_dir() + "/job.html";
    if (absl::Status w = WriteFileDurably(path, page.Frozen()); !w.ok()) {
      SAMPAN_LOG(WARNING) << "job page: " << w.message();
    } else {
      SAMPAN_LOG(INFO) << "job page frozen in " << path;
    }
  }
  return s.ok() ? 0 : Fail(s);
}

int PserverMain(int argc, char** argv) {
  BlockTerminationSignals();
  Invocation inv =
      ParseOrExit(argc, argv,
                  {"index", "coordinator", "port", "port_file", "metrics_port",
                   "metrics_port_file", "host", "advertise"});
  const ClusterConfig& cluster = inv.config.cluster();
  const int index = IntFlagOrExit(inv.flags, "index", -1);
  // A rescaled fleet (`sampan scale`) may have up to one pserver per shard.
  const int max_index = inv.flags.Has("coordinator")
                            ? inv.config.table().num_shards()
                            : cluster.num_pservers();
  if (index < 0 || index >= max_index) {
    return ConfigError(absl::InvalidArgumentError(
        absl::StrFormat("--index=%d out of range [0, %d)", index, max_index)));
  }
  SetLogRole(absl::StrFormat("pserver-%d", index));
  auto metrics = MaybeStartMetrics(inv.flags, inv.config);
  PserverOptions ps_options;
  ps_options.index = index;
  ps_options.num_shards = inv.config.table().num_shards();
  if (inv.flags.Has("coordinator")) {
    // Owns nothing until the coordinator's Register answer says what: the
    // fleet may have been rescaled since the job's first map.
    ps_options.shard_map_version = 0;
  } else {
    // Alone (tools, inspection): the job's first map.
    ps_options.owned_shards =
        InitialShardMap(ps_options.num_shards,
                        std::vector<std::string>(cluster.num_pservers()))
            .ShardsOf(index);
  }
  ps_options.num_workers = cluster.pserver_threads();
  // A memory table never waits on I/O: serve it on gRPC's threads.
  ps_options.run_inline = inv.config.table().backend() != ROCKSDB;
  const TableOptions table_options = TableOptionsFromJob(inv.config, index);
  if (table_options.backend == Backend::kRocksDb) {
    ps_options.data_dir = table_options.data_dir;
    ps_options.min_free_disk_bytes = inv.config.table().min_free_disk_bytes();
    // Checkpoints go where this job's config says, whoever asks.
    const std::string root =
        std::filesystem::absolute(CheckpointRoot(inv.config)).string();
    ps_options.checkpoint_dir = [root, index](uint64_t epoch) {
      return PserverCheckpointDir(root, epoch, index);
    };
  }
  std::vector<std::unique_ptr<SparseTable>> tables;
  absl::StatusOr<std::unique_ptr<SparseTable>> table = NewTable(table_options);
  if (!table.ok()) return Fail(table.status());
  tables.push_back(std::move(*table));
  if (HasDenseTable(inv.config)) {
    table = NewTable(DenseTableOptionsFromJob(inv.config, index));
    if (!table.ok()) return Fail(table.status());
    tables.push_back(std::move(*table));
  }
  // Warm start: this pserver's shards of init_model, before it registers
  // (trainers start once every pserver has).
  if (absl::StatusOr<uint64_t> loaded =
          LoadInitRows(inv.config, index, tables[0].get());
      !loaded.ok()) {
    return Fail(loaded.status());
  }
  if (tables.size() > 1) {
    if (absl::StatusOr<uint64_t> loaded =
            LoadInitDenseRows(inv.config, index, tables[1].get());
        !loaded.ok()) {
      return Fail(loaded.status());
    }
  }
  // Without --coordinator the pserver serves standalone (benchmarks, tools).
  std::unique_ptr<CoordinatorClient> coordinator;
  if (inv.flags.Has("coordinator")) {
    coordinator = std::make_unique<CoordinatorClient>(
        inv.flags.Get("coordinator"),
        absl::Seconds(cluster.rpc_deadline_seconds()),
        absl::Seconds(cluster.wait_timeout_seconds()),
        ChannelCredentialsOrExit(inv.config));
    ps_options.newest_coordinator_epoch = [c = coordinator.get()] {
      return c->newest_epoch();
    };
  }
  auto pserver = Pserver::Create(ps_options, std::move(tables));

  ServeOptions options;
  options.host = cluster.host();
  // Registered with the coordinator: what trainers dial and check the
  // certificate against.
  options.advertise = inv.flags.Get("advertise");
  options.port = IntFlagOrExit(inv.flags, "port", 0);
  options.port_file = inv.flags.Get("port_file");
  options.credentials = ServerCredentialsOrExit(inv.config);
  std::string address;
  // Registers and takes on the shards the answer assigns.
  auto register_pserver = [&]() -> absl::Status {
    coord::RegisterResponse resp;
    absl::Status s =
        coordinator->Register(coord::PSERVER, index, address, &resp);
    if (!s.ok()) return s;
    ps::SetShardsRequest req;
    req.set_shard_map_version(resp.assignment().shard_map_version());
    *req.mutable_owned_shards() = resp.assignment().owned_shards();
    *req.mutable_frozen_shards() = resp.assignment().frozen_shards();
    const grpc::Status applied = pserver->ApplyShardMap(req);
    // An older answer than a SetShards the coordinator sent meanwhile.
    if (!applied.ok() &&
        applied.error_code() != grpc::StatusCode::FAILED_PRECONDITION) {
      return absl::InternalError(absl::StrCat(
          "pserver ", index,
          ": the coordinator's shard assignment: ", applied.error_message()));
    }
    SAMPAN_LOG(INFO) << "pserver " << index << " owns "
                     << req.owned_shards_size() << " shards (map version "
                     << req.shard_map_version() << ")";
    return absl::OkStatus();
  };
  options.on_started = [&](const std::string& a) {
    address = a;
    if (!coordinator) return absl::OkStatus();
    return register_pserver();
  };
  options.on_tick = [&] {
    pserver->RefreshGauges();
    if (!coordinator) return;
    coord::HeartbeatRequest req;
    req.set_role(coord::PSERVER);
    req.set_index(index);
    const PserverLoad load = pserver->Load();
    coord::PserverLoad* out = req.mutable_load();
    out->set_index(index);
    out->set_rows(load.rows);
    out->set_keys_pulled(load.keys_pulled);
    out->set_keys_pushed(load.keys_pushed);
    out->set_resident_memory_bytes(ResidentMemoryBytes());
    absl::Status s = coordinator->Heartbeat(req);
    // A restarted coordinator has forgotten us: register again.
    if (absl::IsNotFound(s)) s = register_pserver();
    if (!s.ok()) SAMPAN_LOG(WARNING) << s.message();
  };
  absl::Status s = ServeUntilSignal(pserver->service(), options);
  pserver->Stop();
  return s.ok() ? 0 : Fail(s);
}

int TrainerMain(int argc, char** argv) {
  Invocation inv =
      ParseOrExit(argc, argv,
                  {"rank", "coordinator", "host", "metrics_port",
                   "metrics_port_file", "checkpoint", "generation"});
  const int rank = IntFlagOrExit(inv.flags, "rank", -1);
  if (rank < 0 ||
      rank >= static_cast<int>(inv.config.cluster().num_trainers())) {
    return ConfigError(absl::InvalidArgumentError(
        absl::StrFormat("--rank=%d out of range [0, %d)", rank,
                        inv.config.cluster().num_trainers())));
  }
  SetLogRole(absl::StrFormat("trainer-%d", rank));
  // The PS client's families (pull latency, push queues) are served here.
  auto metrics = MaybeStartMetrics(inv.flags, inv.config);
  std::string checkpoint = inv.flags.Get("checkpoint");
  if (checkpoint == "latest") {
    // A replaced pod: resume where the newest complete checkpoint has us.
    absl::StatusOr<std::string> dir =
        LatestCompleteCheckpoint(CheckpointRoot(inv.config));
    if (!dir.ok() && !absl::IsNotFound(dir.status())) return Fail(dir.status());
    checkpoint = dir.ok() ? *dir : "";
    SAMPAN_LOG(INFO) << "--checkpoint=latest: "
                     << (dir.ok() ? *dir : dir.status().message());
  }
  absl::Status s =
      RunTrainer(inv.config, rank, inv.flags.Get("coordinator"), checkpoint,
                 IntFlagOrExit(inv.flags, "generation", 0));
  if (absl::IsDataLoss(s)) {
    Fail(s);
    return kTrainerDataErrorExit;  // the launcher does not retry bad data
  }
  if (!s.ok()) return Fail(s);
  SAMPAN_LOG(INFO) << "done";
  return 0;
}

}  // namespace sampan
