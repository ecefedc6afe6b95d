#include "cli/scale.h"

#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/status.h"
#include "cli/submit.h"
#include "common/config.h"
#include "common/flags.h"

namespace sampan {
namespace {

constexpr int kExitUsage = 2;

bool Done(const coord::JobStatusResponse& s, uint32_t wanted) {
  const coord::FleetStatus& f = s.fleet();
  if (f.size() != wanted || f.wanted() != wanted || f.shards_to_move() > 0) {
    return false;
  }
  // Every pserver of the fleet registered (a new one may still start).
  return s.spec().complete();
}

}  // namespace

int ScaleMain(int argc, char** argv) {
  auto flags = Flags::Parse(
      argc, argv, 2, {"pservers", "coordinator", "wait_seconds", "target"});
  if (!flags.ok()) {
    std::cerr << "error: " << flags.status().message() << "\n";
    return kExitUsage;
  }
  int pservers = 0;
  double wait_seconds = 600;
  if (flags->positional().size() != 1 ||
      !absl::SimpleAtoi(flags->Get("pservers"), &pservers) ||
      !absl::SimpleAtod(flags->Get("wait_seconds", "600"), &wait_seconds) ||
      wait_seconds < 0) {
    std::cerr << "usage: sampan scale JOB.yaml --pservers=N "
                 "[--coordinator=HOST:PORT | --target=k8s] "
                 "[--wait_seconds=600]\n";
    return kExitUsage;
  }
  const std::string target = flags->Get("target", "local");
  if (target != "local" && target != "k8s") {
    std::cerr << "error: --target must be local or k8s, got " << target << "\n";
    return kExitUsage;
  }
  JobConfig config;
  absl::StatusOr<std::unique_ptr<CoordinatorClient>> client;
  if (target == "k8s") {
    absl::StatusOr<JobConfig> loaded = LoadJobConfig(flags->positional()[0]);
    if (!loaded.ok()) {
      std::cerr << "error: " << loaded.status().message() << "\n";
      return kExitUsage;
    }
    config = *loaded;
  } else {
    client = ConnectToJob(flags->positional()[0], flags->Get("coordinator"),
                          &config);
    if (!client.ok()) {
      std::cerr << "error: " << client.status().message() << "\n";
      return absl::IsInvalidArgument(client.status()) ? kExitUsage : 1;
    }
  }
  if (pservers < 1 ||
      pservers > static_cast<int>(config.table().num_shards())) {
    std::cerr << "error: --pservers must be in [1, "
              << config.table().num_shards()
              << "] (at most one pserver per shard: table.num_shards in "
              << flags->positional()[0] << "), got " << pservers << "\n";
    return kExitUsage;
  }
  if (target == "k8s") {
    return ScaleOnKubernetes(config, pservers, wait_seconds);
  }
  absl::StatusOr<coord::ScaleResponse> asked = (*client)->Scale(pservers);
  if (!asked.ok()) {
    std::cerr << "error: " << asked.status().message() << "\n";
    return absl::IsInvalidArgument(asked.status()) ? kExitUsage : 1;
  }
  std::cout << "job " << config.name() << ": " << asked->from_pservers()
            << " -> " << pservers << " pservers, " << asked->shards_to_move()
            << " shards to move\n";
  const absl::Time start = absl::Now();
  const absl::Time limit = start + absl::Seconds(wait_seconds);
  std::string last;
  while (wait_seconds > 0) {
    absl::StatusOr<coord::JobStatusResponse> s = (*client)->JobStatus();
    if (s.ok() && Done(*s, pservers)) {
      std::cout << "done in "
                << absl::FormatDuration(absl::Trunc(absl::Now() - start,
                                                    absl::Milliseconds(100)))
                << ": " << pservers << " pservers, shard map version "
                << s->spec().shard_map().version() << "\n";
      return 0;
    }
    // A line when the shards left change (or the job cannot be asked).
    const std::string line =
        s.ok() ? absl::StrCat(
                     s->fleet().size(), " pservers, ",
                     s->fleet().shards_to_move(), " shards to move",
                     s->fleet().last_error().empty()
                         ? ""
                         : "; last failed move: " + s->fleet().last_error())
               : std::string(s.status().message());
    if (line != last) std::cout << line << "\n";
    last = line;
    if (absl::Now() >= limit) {
      std::cerr << "error: the rescale to " << pservers
                << " pservers did not end within " << wait_seconds
                << " s; it goes on (`sampan status` follows it)\n";
      return 1;
    }
    absl::SleepFor(absl::Milliseconds(250));
  }
  return 0;
}

}  // namespace sampan
