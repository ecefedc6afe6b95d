// Maps a job's config onto the TableOptions of one pserver's table, so the
// pserver needs no knowledge of table knobs: NewTable(TableOptionsFromJob(
// job, i)) is the whole setup.
#ifndef SAMPAN_SPARSE_TABLE_JOB_OPTIONS_H_
#define SAMPAN_SPARSE_TABLE_JOB_OPTIONS_H_

#include <cstdint>

#include "proto/job.pb.h"
#include "sparse_table/sparse_table.h"

namespace sampan {

// The RocksDB directory is <table.data_dir or output_dir/tables>/pserver-<i>.
// LR jobs get embedding_dim 0. Expects a config ValidateJobConfig accepted.
TableOptions TableOptionsFromJob(const JobConfig& job, uint32_t pserver_index);

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_JOB_OPTIONS_H_
