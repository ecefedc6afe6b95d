// `sampan run JOB.yaml`: a whole job on one machine.
//
// Starts the coordinator, the pservers and the trainers as child processes
// of this one on loopback (free ports, each child's output in
// <output_dir>/logs/<role>-<i>.log), shows one progress line, and prints the
// final test metrics. Promises:
//   - if any child fails, the others are stopped and the exit status is
//     non-zero, with the failed child's last log lines printed;
//   - Ctrl-C (SIGINT) or SIGTERM stops everything;
//   - no child outlives the launcher, even if the launcher is SIGKILLed
//     (children die with their parent through PR_SET_PDEATHSIG);
//   - crashed children come back by cli/restart_policy.h: a RocksDB
//     pserver on a new port, the coordinator and serving on theirs, a
//     trainer of a job that takes checkpoints at the latest checkpoint's
//     data position (in hybrid and stream jobs all ranks, as a new
//     collective generation), up to cluster.max_restarts times.
#ifndef SAMPAN_CLI_LAUNCHER_H_
#define SAMPAN_CLI_LAUNCHER_H_

#include <string>

#include "proto/job.pb.h"

namespace sampan {

// A trainer's exit status when its input is bad (DataLoss: malformed rows
// over data.max_bad_fraction, a truncated or corrupt file): a restart would
// meet the same rows, so the launcher stops the job instead, hybrid or not.
inline constexpr int kTrainerDataErrorExit = 3;

// Runs the job in `config` (already loaded and validated) and returns the
// process exit status: 0 on success. With `resume`, the pservers' tables
// are first restored from the latest complete checkpoint and the trainers
// start at their positions recorded there; no such checkpoint is an error.
int RunLocalJob(JobConfig config, bool resume = false);

}  // namespace sampan

#endif  // SAMPAN_CLI_LAUNCHER_H_
