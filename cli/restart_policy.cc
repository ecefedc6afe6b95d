#include "cli/restart_policy.h"

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/launcher.h"
#include "common/config.h"
#include "coordinator/checkpoint_store.h"

namespace sampan {

RestartPolicy::RestartPolicy(const JobConfig& config,
                             CoordinatorOutages* outages, Relaunch relaunch)
    : config_(config),
      outages_(outages),
      relaunch_(std::move(relaunch)),
      regroup_(IsDeepModel(config.model().type()) ||
               !config.data().stream().root().empty()),
      regroups_left_(config.cluster().max_restarts()) {}

bool RestartPolicy::Restart(Child& c, std::deque<Child>& children) {
  if (c.restarts_left <= 0) return false;
  if (c.is_trainer) return RestartTrainer(c, children);
  // Serving's users and every member hold the coordinator's address.
  const bool same_port = c.name == "serve" || c.name == "coordinator";
  std::string where = "a new port";
  if (same_port) {
    std::ifstream in(c.port_file);
    int port = 0;
    if (!(in >> port) || port <= 0) return false;
    SetFlag(&c.args, "port", absl::StrCat(port));
    where = absl::StrCat("port ", port);
  } else {
    SetFlag(&c.args, "port", "0");
    std::remove(c.port_file.c_str());  // the new one reports its own
  }
  --c.restarts_left;
  std::cerr << "\n"
            << c.name << " (pid " << c.pid << ") " << DescribeExit(c.status)
            << "; restarting it on " << where << " (" << c.restarts_left
            << " restarts left)"
            << (c.name == "serve" ? "; it loads the newest version again\n"
                : c.name == "coordinator"
                    ? "; members re-register with it and training goes "
                      "on meanwhile\n"
                    : "; it recovers acknowledged pushes from its RocksDB "
                      "log, and its clients find it through the shard "
                      "map\n");
  relaunch_(c);
  if (c.name == "coordinator") outages_->Died(absl::Now());
  ++(c.name == "serve"         ? counts_.serve
     : c.name == "coordinator" ? counts_.coordinator
                               : counts_.pservers);
  return true;
}

// What a restarted trainer trained after its checkpoint's position is
// trained again: pserver rows keep every acknowledged push and do not roll
// back.
bool RestartPolicy::RestartTrainer(Child& c, std::deque<Child>& children) {
  if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == kTrainerDataErrorExit) {
    return false;
  }
  // A stream's trainers meet at every pass end: one restarted alone would
  // wait at barriers the others passed long ago.
  if (regroup_) return RegroupTrainers(children);
  // A trainer that exits with an error (bad data, a refused push) would
  // meet the same error again; only a crash is worth a restart.
  if (!WIFSIGNALED(c.status)) return false;
  --c.restarts_left;
  absl::StatusOr<std::string> dir =
      LatestCompleteCheckpoint(CheckpointRoot(config_));
  SetFlag(&c.args, "checkpoint", dir.ok() ? *dir : "");
  std::cerr << "\n"
            << c.name << " (pid " << c.pid << ") " << DescribeExit(c.status)
            << "; restarting it from "
            << (dir.ok() ? *dir : "the start of its input (no checkpoint yet)")
            << " (" << c.restarts_left << " restarts left)\n";
  relaunch_(c);
  ++counts_.trainers;
  return true;
}

// Hybrid ranks allreduce in lockstep, so one rank cannot rejoin a running
// group, and the others fail as soon as a peer dies (with an error, not a
// signal). So any trainer failure stops every rank, and all restart from the
// latest checkpoint (same dense state and positions) in a new collective
// generation.
bool RestartPolicy::RegroupTrainers(std::deque<Child>& children) {
  if (regroups_left_ <= 0) return false;
  --regroups_left_;
  for (Child& t : children) {
    if (!t.is_trainer || t.exited) continue;
    kill(t.pid, SIGKILL);
    waitpid(t.pid, &t.status, 0);
    t.exited = true;
  }
  ++generation_;
  absl::StatusOr<std::string> dir =
      LatestCompleteCheckpoint(CheckpointRoot(config_));
  std::cerr << "\na hybrid trainer failed; restarting all "
            << config_.cluster().num_trainers() << " trainers from "
            << (dir.ok() ? *dir : "the start (no checkpoint yet)")
            << " as collective generation " << generation_ << " ("
            << regroups_left_ << " regroups left)\n";
  for (Child& t : children) {
    if (!t.is_trainer) continue;
    SetFlag(&t.args, "checkpoint", dir.ok() ? *dir : "");
    SetFlag(&t.args, "generation", absl::StrCat(generation_));
    relaunch_(t);
  }
  ++counts_.trainers;
  return true;
}

}  // namespace sampan
