#include "cli/status.h"

#include <fstream>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/config.h"
#include "common/flags.h"
#include "common/security.h"
#include "coordinator/client.h"

namespace sampan {
namespace {

constexpr int kExitUsage = 2;

int Alive(const google::protobuf::RepeatedPtrField<coord::Member>& members) {
  int n = 0;
  for (const coord::Member& m : members) n += m.alive() ? 1 : 0;
  return n;
}

// Address of a local job's coordinator, from the port file `sampan run`
// writes next to the logs.
absl::StatusOr<std::string> LocalCoordinator(const JobConfig& config,
                                             const std::string& config_path) {
  const std::string path = config.output_dir() + "/coordinator.port";
  std::ifstream in(path);
  int port = 0;
  if (!(in >> port) || port <= 0) {
    return absl::NotFoundError(absl::StrCat("no running job: cannot read ",
                                            path, " (is `sampan run ",
                                            config_path, "` running?)"));
  }
  return absl::StrCat(config.cluster().host(), ":", port);
}

}  // namespace

JobTotals SumTrainers(const coord::JobStatusResponse& s) {
  JobTotals t;
  for (const coord::TrainerProgress& p : s.trainers()) {
    t.examples += p.examples();
    t.loss_sum += p.loss_sum();
    t.auc_weighted += p.train_auc() * p.examples();
    t.fraction += p.fraction_done();
    t.finished += p.finished() ? 1 : 0;
  }
  if (s.trainers_size() > 0) t.fraction /= s.trainers_size();
  return t;
}

std::string JobState(const coord::JobStatusResponse& s) {
  const JobTotals t = SumTrainers(s);
  if (s.spec().num_trainers() > 0 && t.finished == s.spec().num_trainers()) {
    return "FINISHED";
  }
  if (!s.spec().complete()) return "STARTING";
  return t.examples > 0 ? "RUNNING" : "WAITING";
}

std::string JobPageUrl(const JobConfig& config) {
  std::ifstream in(config.output_dir() + "/metrics/coordinator.port");
  int port = 0;
  if (!(in >> port) || port <= 0) return "";
  return absl::StrCat(SecurityOptionsFromJob(config).tls() ? "https" : "http",
                      "://", config.cluster().host(), ":", port, "/job");
}

std::string FleetLine(const coord::FleetStatus& f) {
  if (f.size() == 0) return "";  // a coordinator from before elasticity
  std::string out;
  if (f.wanted() != f.size() || f.shards_to_move() > 0) {
    out = absl::StrFormat("fleet: rescaling to %d pservers, %d shards to move",
                          f.wanted(), f.shards_to_move());
    if (!f.moving().empty())
      absl::StrAppend(&out, " (moving ", f.moving(), ")");
  } else if (f.shards_moved() > 0) {
    out = absl::StrFormat("fleet: %d pservers", f.size());
  }
  if (f.shards_moved() > 0) {
    absl::StrAppend(&out, absl::StrFormat("; %d shards (%d rows) moved so far",
                                          f.shards_moved(), f.rows_moved()));
  }
  if (!f.last_error().empty() && !out.empty()) {
    absl::StrAppend(&out, "; last failed move: ", f.last_error());
  }
  return out;
}

std::string FormatJobStatus(const std::string& job_name,
                            const coord::JobStatusResponse& before,
                            const coord::JobStatusResponse& now,
                            absl::Duration dt) {
  const JobTotals t0 = SumTrainers(before), t = SumTrainers(now);
  const double seconds = absl::ToDoubleSeconds(dt);
  const double rate = seconds > 0 && t.examples >= t0.examples
                          ? (t.examples - t0.examples) / seconds
                          : 0;
  const coord::ClusterSpec& spec = now.spec();
  std::string out = absl::StrFormat(
      "job %s: %s after %.0f s\n"
      "members: pservers %d/%d alive (shard map version %d), trainers %d/%d "
      "alive, %d finished\n"
      "progress: %.1f%% done, %d examples, %.0f examples/s, loss %.4f, "
      "train AUC %.4f\n",
      job_name, JobState(now), now.elapsed_seconds(), Alive(spec.pservers()),
      spec.num_pservers(), spec.shard_map().version(), Alive(spec.trainers()),
      spec.num_trainers(), t.finished, 100 * t.fraction, t.examples, rate,
      t.examples ? t.loss_sum / t.examples : 0,
      t.examples ? t.auc_weighted / t.examples : 0.5);
  if (const std::string fleet = FleetLine(now.fleet()); !fleet.empty()) {
    absl::StrAppend(&out, fleet, "\n");
  }
  if (now.coordinator_incarnations() > 1) {
    absl::StrAppend(
        &out, absl::StrFormat("coordinator: restarted %d time(s); this one "
                              "(epoch %d) up %.0f s\n",
                              now.coordinator_incarnations() - 1,
                              now.coordinator_epoch(), now.elapsed_seconds()));
  }
  absl::StrAppend(&out, absl::StrFormat("%-5s %12s %7s %8s %7s %9s %s\n",
                                        "rank", "examples", "done", "auc",
                                        "loss", "bad_rows", "state"));
  for (int r = 0; r < now.trainers_size(); ++r) {
    const coord::TrainerProgress& p = now.trainers(r);
    const bool alive = r < spec.trainers_size() && spec.trainers(r).alive();
    absl::StrAppend(
        &out, absl::StrFormat(
                  "%-5d %12d %6.1f%% %8.4f %7.4f %9d %s\n", r, p.examples(),
                  100 * p.fraction_done(), p.train_auc(),
                  p.examples() ? p.loss_sum() / p.examples() : 0, p.bad_rows(),
                  p.finished() ? "finished"
                  : alive      ? "running"
                               : "lost"));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<CoordinatorClient>> ConnectToJob(
    const std::string& config_path, const std::string& coordinator,
    JobConfig* config) {
  // The config, when given, names the job and brings its TLS settings; the
  // address comes from --coordinator or from a local job's port file.
  *config = JobConfig();
  if (!config_path.empty()) {
    absl::StatusOr<JobConfig> loaded = LoadJobConfig(config_path);
    if (!loaded.ok())
      return absl::InvalidArgumentError(loaded.status().message());
    *config = *loaded;
  }
  std::string address = coordinator;
  if (address.empty()) {
    absl::StatusOr<std::string> local = LocalCoordinator(*config, config_path);
    if (!local.ok()) return local.status();
    address = *local;
  }
  auto credentials = MakeChannelCredentials(SecurityOptionsFromJob(*config));
  if (!credentials.ok()) {
    return absl::InvalidArgumentError(credentials.status().message());
  }
  return std::make_unique<CoordinatorClient>(address, absl::Seconds(5),
                                             absl::Seconds(5), *credentials);
}

int StatusMain(int argc, char** argv) {
  absl::StatusOr<Flags> flags =
      Flags::Parse(argc, argv, 2, {"coordinator", "interval"});
  if (!flags.ok()) {
    std::cerr << "error: " << flags.status().message() << "\n";
    return kExitUsage;
  }
  double interval = 1;
  if (!absl::SimpleAtod(flags->Get("interval", "1"), &interval) ||
      !(interval >= 0 && interval <= 60)) {
    std::cerr << "error: --interval must be a number of seconds in [0, 60]\n";
    return kExitUsage;
  }
  if (flags->positional().size() > 1 ||
      (flags->positional().empty() && !flags->Has("coordinator"))) {
    std::cerr << "usage: sampan status [JOB.yaml] [--coordinator=HOST:PORT] "
                 "[--interval=SECONDS]\n";
    return kExitUsage;
  }
  JobConfig config;
  absl::StatusOr<std::unique_ptr<CoordinatorClient>> client =
      ConnectToJob(flags->positional().empty() ? "" : flags->positional()[0],
                   flags->Get("coordinator"), &config);
  if (!client.ok()) {
    std::cerr << "error: " << client.status().message() << "\n";
    return absl::IsInvalidArgument(client.status()) ? kExitUsage : 1;
  }
  const std::string name = config.name().empty() ? "?" : config.name();
  const std::string address = (*client)->address();
  auto before = (*client)->JobStatus();
  if (!before.ok()) {
    std::cerr << "error: coordinator at " << address
              << " not reachable: " << before.status().message() << "\n";
    return 1;
  }
  const absl::Time t0 = absl::Now();
  absl::SleepFor(absl::Seconds(interval));
  auto now = (*client)->JobStatus();
  if (!now.ok()) now = before;  // finished between the calls
  std::cout << FormatJobStatus(name, *before, *now, absl::Now() - t0);
  if (const std::string url = JobPageUrl(config); !url.empty()) {
    std::cout << "live page: " << url
              << (config.cluster().security().token_file().empty()
                      ? ""
                      : "#token=<the job's token>")
              << "\n";
  }
  return 0;
}

}  // namespace sampan
