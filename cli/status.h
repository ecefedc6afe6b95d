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

#include <string>

#include "absl/time/time.h"
#include "proto/coordinator.pb.h"

namespace sampan {

// The report for two snapshots taken `dt` apart (pure; tested directly).
std::string FormatJobStatus(const std::string& job_name,
                            const coord::JobStatusResponse& before,
                            const coord::JobStatusResponse& now,
                            absl::Duration dt);

// `sampan status [JOB.yaml] [--coordinator=HOST:PORT] [--interval=SECONDS]`
// (at least one of the two);
// returns the exit status (1 when the coordinator cannot be reached).
int StatusMain(int argc, char** argv);

}  // namespace sampan

#endif  // SAMPAN_CLI_STATUS_H_
