// What `sampan run` does before it starts any process (cli/launcher.h):
// checks that the job's input is readable and its init_model usable,
// creates <output_dir>/logs and /metrics, restores the tables from the
// latest checkpoint (--resume) or the init_model checkpoint (a warm start),
// writes synthetic data, checks the tables the pservers will open, and
// writes the resolved config every child reads. A problem is printed to
// stderr; nothing has started then, so there is nothing to stop.
#ifndef SAMPAN_CLI_JOB_PREPARE_H_
#define SAMPAN_CLI_JOB_PREPARE_H_

#include <cstdint>
#include <string>

#include "cli/synthetic_data.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"

namespace sampan {

struct PreparedJob {
  std::string config_path;  // <output_dir>/job.pbtxt: the children's config
  std::string resume_from;  // the checkpoint directory resumed from, if any
  // A rescaled fleet's checkpoint: the coordinator starts from it (empty
  // owners: the fleet is cluster.num_pservers).
  coord::FleetState fleet_seed;
  SyntheticData synthetic;      // data.synthetic: the files and planted AUC
  uint64_t synthetic_rows = 0;  // data.synthetic.rows as the job asked
};

// Prepares `config` (rewritten: a checked init_model, synthetic data as
// plain files) and fills `out`. Returns 0, or the exit status: 2 for a
// problem in the job (unreadable data, a bad init_model, a table layout
// that does not match), 1 for one met doing the work (a directory that
// cannot be created, no checkpoint to resume from).
int PrepareJob(bool resume, JobConfig* config, PreparedJob* out);

// Where the children's logs and metrics port files go.
std::string JobLogDir(const JobConfig& config);
std::string JobMetricsDir(const JobConfig& config);

}  // namespace sampan

#endif  // SAMPAN_CLI_JOB_PREPARE_H_
