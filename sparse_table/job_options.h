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

// CheckTableLayout for every pserver's sparse and dense tables that exist
// on disk (pservers past cluster.num_pservers too: a rescaled fleet's), so
// that `sampan validate` and `sampan run` refuse a config that no longer
// fits the job's tables (another row_format, embedding_dim or optimizer)
// before any process starts. The error names the directory.
absl::Status CheckJobTableLayouts(const JobConfig& job);

// Table ids on the wire (proto/ps.proto): the sparse rows, and the dense
// weights of model.mode ASYNC deep models and of LR/FM with dense inputs
// (trainer/async_dense.h).
inline constexpr uint32_t kSparseTableId = 0;
inline constexpr uint32_t kDenseTableId = 1;

// table.optimizer.embedding_initial_accumulator 0 (unset) means this, but
// for DNN initial_accumulator (TableOptionsFromJob).
inline constexpr float kEmbeddingInitialAccumulator = 1000;

// Whether the job's pservers also serve table kDenseTableId.
bool HasDenseTable(const JobConfig& job);

// Table kDenseTableId of pserver i: rows as wide as table 0's, updated by
// model.dense_optimizer's rule (SGD and Adam as the trainer applies them in
// SYNC and HYBRID; the table's Adagrad keeps one accumulator per row block,
// the trainer's one per weight),
// starting at zero (the rows are offsets from the model's initialisation),
// never admitted late, delayed or shrunk away. Its RocksDB directory lies
// inside table 0's, `<table 0's>/table-1`, so that the snapshot, copy and
// restore of that directory carry both tables.
TableOptions DenseTableOptionsFromJob(const JobConfig& job,
                                      uint32_t pserver_index);

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_JOB_OPTIONS_H_
