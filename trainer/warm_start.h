// Warm start (JobConfig.init_model): a job starts from what an earlier job
// trained instead of from fresh rows: a published version
// (trainer/model_version.h) or a batch job's export (trainer/model_export.h),
// which hold [w, v] only; or a checkpoint (coordinator/checkpoint_store.h),
// which holds the whole table: rows with their optimizer state and
// show/click, writer sequences, and the dense weights with their optimizer
// state.
//
// Promises:
//  - CheckInitModel reads the whole model once (every file of a version's
//    chain or a checkpoint checked against its manifest) and compares its
//    shape with the job's; a model that cannot be read or is another model
//    is an error naming init_model and what differs, found before anything
//    starts. A checkpoint must also have been taken by a job with the same
//    tables (pservers, shards, backend, row optimizer) and the same home
//    for the dense weights, since its snapshots are used as they are.
//  - From a model, LoadInitRows (and LoadInitDenseRows, for the dense
//    table) gives pserver `index` exactly the rows of its own shards
//    (common/hash.h), [w, v] as the model holds them, in one BulkLoad
//    (RocksDB: one ingested SST file; statistics and optimizer state start
//    fresh), and only into an empty table: a restarted pserver or a resumed
//    job keeps the rows it trained.
//  - From a checkpoint, the launcher copies each pserver's snapshot into
//    its database directory before it starts (cli/resume.h), so the
//    loaders load nothing; trainers take dense.bin (HYBRID/SYNC).
#ifndef SAMPAN_TRAINER_WARM_START_H_
#define SAMPAN_TRAINER_WARM_START_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/job.pb.h"
#include "sparse_table/sparse_table.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/model_io.h"

namespace sampan {

// "" without init_model; else the directory the job starts from:
// init_model, or for a root of checkpoints the newest complete one (pin
// init_model to it, so that every process of the job takes the same one).
// InvalidArgument ("init_model DIR: ...") for a model of another shape or a
// job that cannot warm start from it; the read's error (NotFound, DataLoss)
// with init_model named otherwise.
absl::StatusOr<std::string> CheckInitModel(const JobConfig& config);

// Whether init_model names a checkpoint or a root of them (a directory with
// a MANIFEST, or with ckpt-<epoch> directories) rather than a model.
bool InitFromCheckpoint(const JobConfig& config);

// Rows loaded (0 when the table had rows already or without init_model).
absl::StatusOr<uint64_t> LoadInitRows(const JobConfig& config, int index,
                                      SparseTable* table);

// The same for the pservers' dense table (model.mode ASYNC; LR/FM with
// dense inputs): init_model's dense weights laid out as that table's rows
// (trainer/async_dense.h: offsets from the model's own initialisation),
// pserver `index`'s share of them. The dense optimizer's state starts fresh.
absl::StatusOr<uint64_t> LoadInitDenseRows(const JobConfig& config, int index,
                                           SparseTable* table);

// The init model's keys with key % parts == part, sorted: what the first
// base of a warm-started stream holds besides the keys it trained. A
// checkpoint's are read from its pserver snapshots (read-only).
absl::StatusOr<std::vector<uint64_t>> InitModelKeys(const JobConfig& config,
                                                    int part, int parts);

// The init model's (or checkpoint's dense.bin's) dense weights and
// optimizer state, for `model`.
absl::StatusOr<DenseModelState> LoadInitDense(const JobConfig& config,
                                              const CtrModel& model);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_WARM_START_H_
