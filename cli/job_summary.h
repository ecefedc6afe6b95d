// What `sampan run` prints when a job has ended well: a stream's per-pass
// table (from <output_dir>/passes.tsv) and where its LATEST version is, the
// test metrics of result.txt, the planted model's for synthetic data, and
// how many processes were restarted on the way.
#ifndef SAMPAN_CLI_JOB_SUMMARY_H_
#define SAMPAN_CLI_JOB_SUMMARY_H_

#include <ostream>

#include "absl/time/time.h"
#include "proto/job.pb.h"

namespace sampan {

struct JobSummary {
  // Synthetic data only (planted_rows > 0): the best reachable scores.
  uint64_t planted_rows = 0;
  double planted_auc = 0;
  double planted_logloss = 0;
  // Restarts the launcher made, by role.
  int pserver_restarts = 0;
  int serve_restarts = 0;
  int coordinator_restarts = 0;
  int trainer_restarts = 0;
  // Times the coordinator did not answer the launcher (dead or stopped),
  // and how long that lasted in all.
  int coordinator_outages = 0;
  absl::Duration coordinator_waited;
};

// Prints the summary of the job `config` (as the launcher resolved it) to
// `out`; reads only files the job wrote, and says "none" for what is absent.
void PrintJobSummary(const JobConfig& config, const JobSummary& summary,
                     std::ostream& out);

}  // namespace sampan

#endif  // SAMPAN_CLI_JOB_SUMMARY_H_
