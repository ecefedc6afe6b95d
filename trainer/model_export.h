// Exported models: the directory a finished job writes to
// <output_dir>/model and `sampan eval MODEL DATA` reads.
//
//   job.pbtxt          the job config that trained it (text proto): model
//                      type and sizes, data format
//   dense.bin          the dense weights and their optimizer state
//                      (trainer/model/model_io.h); present for every model,
//                      empty of weights for LR and FM
//   sparse-NNNNN.bin   part N: the rows [w, v[dim]] of every feature sign
//                      that trainer N trained on (each rank exports the keys
//                      of its own data part after the last push), as a
//                      checked file (trainer/model/checked_file.h, magic
//                      "SAMPSPR"): u32 row_dim, u64 n, u64 keys[n] sorted,
//                      f32 rows[n * row_dim]
//   MODEL              written last, so a directory without it is
//                      incomplete: "sampan_model=1", "sparse_parts=N",
//                      "min_feature_count=M" (rare signs were merged, see
//                      MergeRareSigns: eval maps a sign without a row to its
//                      slot's rare sign)
//
// A sign without a row scores as zeros, as a pull without creating rows
// does, so eval reproduces the trainer's own test evaluation.
#ifndef SAMPAN_TRAINER_MODEL_EXPORT_H_
#define SAMPAN_TRAINER_MODEL_EXPORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "proto/job.pb.h"
#include "trainer/model/checked_file.h"

namespace sampan {

struct ModelManifest {
  int sparse_parts = 1;
  // > 1 when signs seen fewer times in training were merged per slot.
  int min_feature_count = 0;
};

// The export directory of a job.
std::string ModelDir(const JobConfig& config);
std::string DenseModelPath(const std::string& dir);

// Reads rows of `keys` into `out` (keys.size() * row_dim floats) without
// creating rows: a table's or PS client's Pull(keys, false, out).
using RowReader =
    std::function<absl::Status(absl::Span<const uint64_t> keys, float* out)>;

// Writes part `part` of `dir`: the rows of `keys` (any order, unique) read
// through `read` in chunks. Creates `dir` when missing. With
// `drop_zero_rows`, keys whose row reads all zeros (no row: deleted, never
// admitted) are left out, as model versions want.
absl::Status ExportSparsePart(const std::string& dir, int part,
                              std::vector<uint64_t> keys, int row_dim,
                              const RowReader& read,
                              bool drop_zero_rows = false);

// Writes job.pbtxt, then MODEL; call once every part and dense.bin exist.
absl::Status FinishModelDir(const std::string& dir, const JobConfig& config,
                            const ModelManifest& manifest);

// An exported model's sparse rows, every part merged.
struct SparseRows {
  int row_dim = 0;
  absl::flat_hash_map<uint64_t, uint32_t> index;  // key -> row
  std::vector<float> rows;
};

// One part's rows as written: keys unique and ascending, row i at
// rows[i * row_dim..].
struct SparsePart {
  int row_dim = 0;
  std::vector<uint64_t> keys;
  std::vector<float> rows;
};

// Reads part `part` of `dir` whole (its CRC checked), for readers that stream
// a model part by part rather than merge it (serving/row_store.h). NotFound
// when it is missing; DataLoss when truncated or corrupt; FailedPrecondition
// when its rows are not `row_dim` floats wide (0 takes any width).
absl::StatusOr<SparsePart> ReadSparsePart(const std::string& dir, int part,
                                          int row_dim);

// Part `part` of `dir` read a chunk of rows at a time, for readers that
// pass rows on (serving/row_store.h's bulk load) and so hold one chunk, not
// the part. Open checks the part whole first (CRC32, one streaming pass);
// errors as ReadSparsePart. Not thread-safe.
class SparsePartReader {
 public:
  static absl::StatusOr<std::unique_ptr<SparsePartReader>> Open(
      const std::string& dir, int part, int row_dim);
  int row_dim() const { return row_dim_; }
  uint64_t rows() const { return rows_; }
  // The next (up to) max_rows rows into *chunk, replacing its keys and
  // rows; false, chunk empty, after the last. DataLoss or Unavailable when
  // the file cannot be read as at Open.
  absl::StatusOr<bool> Next(size_t max_rows, SparsePart* chunk);

 private:
  SparsePartReader(std::unique_ptr<CheckedFileReader> file, int row_dim,
                   uint64_t rows)
      : file_(std::move(file)), row_dim_(row_dim), rows_(rows) {}
  std::unique_ptr<CheckedFileReader> file_;
  const int row_dim_;
  const uint64_t rows_;
  uint64_t next_ = 0;
};

// Reads MODEL and job.pbtxt of `dir`: NotFound naming the file when the
// directory is not a (complete) exported model; DataLoss when malformed.
absl::StatusOr<ModelManifest> ReadModelManifest(const std::string& dir,
                                                JobConfig* config);
// Reads every part; each must have `row_dim` floats per row (0: as many as
// the first part says).
absl::StatusOr<SparseRows> ReadSparseRows(const std::string& dir,
                                          const ModelManifest& manifest,
                                          int row_dim);
// The number of rows in the parts of `dir`, from their headers alone (parts
// may share keys, so merged rows can be fewer).
absl::StatusOr<uint64_t> CountSparseRows(const std::string& dir,
                                         const ModelManifest& manifest);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_EXPORT_H_
