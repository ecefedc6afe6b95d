// Which crashed children of `sampan run` come back, and how (cli/launcher.h
// supervises them; this is its policy):
//  - a pserver with a durable (RocksDB) table: on a new port, as a
//    rescheduled pod comes back at a new address; it recovers acknowledged
//    pushes from its log and its clients find it through the shard map;
//  - the coordinator and serving: on their ports, which others hold;
//  - a trainer of a job that takes checkpoints, killed by a signal: from the
//    latest complete checkpoint's data position (an error exit would meet
//    the same error again);
//  - hybrid (deep) or stream trainers: all of them together, as a new
//    collective generation, since one cannot rejoin a running group.
// Each child has its own restarts_left; hybrid regroups share the job's
// cluster.max_restarts. A data error (kTrainerDataErrorExit) never restarts.
//
// Not thread-safe: the launcher's supervising loop owns it.
#ifndef SAMPAN_CLI_RESTART_POLICY_H_
#define SAMPAN_CLI_RESTART_POLICY_H_

#include <cstdint>
#include <deque>
#include <functional>

#include "cli/child_process.h"
#include "cli/coordinator_outages.h"
#include "proto/job.pb.h"

namespace sampan {

// Restarts counted by kind, for the job's summary.
struct RestartCounts {
  int pservers = 0;
  int serve = 0;
  int coordinator = 0;
  int trainers = 0;  // single restarts and hybrid regroups
};

class RestartPolicy {
 public:
  // Relaunch(child) starts child.args again, appending to its log.
  using Relaunch = std::function<void(Child&)>;

  // `outages` learns when the coordinator died; it must outlive this.
  RestartPolicy(const JobConfig& config, CoordinatorOutages* outages,
                Relaunch relaunch);

  // `c` (one of `children`) exited uncleanly with c.status. Relaunches it
  // (for a hybrid or stream trainer: every trainer in `children`, the live
  // ones SIGKILLed first) and returns true, or returns false when it may
  // not come back.
  bool Restart(Child& c, std::deque<Child>& children);

  const RestartCounts& counts() const { return counts_; }

 private:
  bool RestartTrainer(Child& c, std::deque<Child>& children);
  bool RegroupTrainers(std::deque<Child>& children);

  const JobConfig& config_;
  CoordinatorOutages* const outages_;
  const Relaunch relaunch_;
  const bool regroup_;  // hybrid or stream: trainers restart as a group
  int regroups_left_;
  uint64_t generation_ = 0;  // of the hybrid collective group
  RestartCounts counts_;
};

}  // namespace sampan

#endif  // SAMPAN_CLI_RESTART_POLICY_H_
