// `sampan status`: one look at a running job through its coordinator.
//
// Finds the coordinator from the job config (<output_dir>/coordinator.port,
// written by `sampan run`) or from --coordinator=HOST:PORT (on Kubernetes,
// inside the coordinator pod:
//   kubectl exec deploy/NAME-coordinator -- sh -c
//     'sampan status /etc/sampan/job.yaml --coordinator=$POD_IP:7000'
// since it listens on the pod IP), with the config's TLS settings; takes two
// JobStatus snapshots `interval` apart and prints the state, membership,
// throughput, loss, train AUC and a line per trainer rank. Read-only; every
// call has a deadline.
#ifndef SAMPAN_CLI_STATUS_H_
#define SAMPAN_CLI_STATUS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/client.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"

namespace sampan {

// The trainers' progress summed: examples, their loss sum and train AUC
// weighted by examples, the mean fraction of input done, ranks finished.
struct JobTotals {
  uint64_t examples = 0;
  double loss_sum = 0;
  double auc_weighted = 0;
  double fraction = 0;
  int finished = 0;
};
JobTotals SumTrainers(const coord::JobStatusResponse& status);

// STARTING (not every pserver registered), WAITING (no example trained
// yet), RUNNING or FINISHED (every trainer finished its input).
std::string JobState(const coord::JobStatusResponse& status);

// The live job page of a local job (`sampan run` writes the coordinator's
// metrics port under <output_dir>/metrics), or "" when none is running.
std::string JobPageUrl(const JobConfig& config);

// "fleet: rescaling 2 -> 3 pservers, ..." while a rescale is under way or
// after one; "" otherwise (the progress line and `sampan status` show it).
std::string FleetLine(const coord::FleetStatus& fleet);

// The report for two snapshots taken `dt` apart (pure; tested directly).
std::string FormatJobStatus(const std::string& job_name,
                            const coord::JobStatusResponse& before,
                            const coord::JobStatusResponse& now,
                            absl::Duration dt);

// A client of a running job's coordinator: at `coordinator` (HOST:PORT)
// when given, else a local job's (config_path's output_dir), with the
// config's TLS settings; *config is the loaded config (empty without one).
// INVALID_ARGUMENT for a config or TLS setting that does not load;
// NOT_FOUND naming the port file when no local job runs.
absl::StatusOr<std::unique_ptr<CoordinatorClient>> ConnectToJob(
    const std::string& config_path, const std::string& coordinator,
    JobConfig* config);

// `sampan status [JOB.yaml] [--coordinator=HOST:PORT] [--interval=SECONDS]`
// (at least one of the two);
// returns the exit status (1 when the coordinator cannot be reached).
int StatusMain(int argc, char** argv);

}  // namespace sampan

#endif  // SAMPAN_CLI_STATUS_H_
