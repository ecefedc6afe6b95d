// The one way a trained model turns examples into probabilities, shared by
// `sampan eval` (trainer/eval_job.h) and `sampan serve` (serving/): the
// model's rows for the examples' signs (zeros for signs without a row; with
// min_feature_count > 1 a sign without a row takes its slot's rare sign,
// as the trainer's test set did), then CtrModel::Step's forward pass with
// the model's dense weights. An example's probability depends only on the
// example and the model, never on the other examples of its batch, nor on
// where the rows are kept: in memory (eval, small models served), in a
// local RocksDB store or on lookup shards (serving/), all behind RowSource.
//
// Thread safety: a ScoringModel is immutable once loaded; any number of
// threads may call ScoreBatch on one concurrently, each with its own
// ScoringWorkspace.
#ifndef SAMPAN_TRAINER_SCORING_H_
#define SAMPAN_TRAINER_SCORING_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/fork_join.h"
#include "trainer/batch_keys.h"
#include "trainer/data/batch.h"
#include "trainer/data/formats.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/model_io.h"
#include "trainer/model_version.h"

namespace sampan {

// Where a model's sparse rows are read from; one version's rows, immutable.
// Thread-safe: Lookup may run on any number of threads at once.
class RowSource {
 public:
  virtual ~RowSource() = default;
  // Floats per row.
  virtual int row_dim() const = 0;
  // Writes the row of each key to rows[i * row_dim()..] (zeros for a key
  // without one) and found[i] = whether it had one. Keys may repeat. An
  // error (a store's I/O error, a lookup shard unreachable) fails the whole
  // lookup and names its cause; rows are then unspecified.
  virtual absl::Status Lookup(absl::Span<const uint64_t> keys, float* rows,
                              uint8_t* found) const = 0;
  // The rows it holds, for metrics: exact in memory, RocksDB's estimate in
  // a store, 0 where unknown (rows on lookup shards).
  virtual uint64_t row_count() const { return 0; }
};

// The rows of a SparseRows in memory, which must outlive it.
class SparseRowSource final : public RowSource {
 public:
  explicit SparseRowSource(const SparseRows* sparse) : sparse_(sparse) {}
  int row_dim() const override { return sparse_->row_dim; }
  absl::Status Lookup(absl::Span<const uint64_t> keys, float* rows,
                      uint8_t* found) const override;
  uint64_t row_count() const override { return sparse_->index.size(); }

 private:
  const SparseRows* sparse_;
};

// A model read for scoring: its rows, its network and its dense weights.
struct ScoringModel {
  // Its config, manifest and VERSION; loaded.sparse holds the rows when they
  // are kept in memory, and is empty when `rows` reads them elsewhere.
  LoadedModel loaded;
  // Where ScoreBatch reads rows; null = loaded.sparse.
  std::shared_ptr<const RowSource> rows;
  std::unique_ptr<CtrModel> model;
  DenseModelState dense;
  // How the model's data lines parse (trainer/data_options.h).
  ParseOptions parse;
  // data.batch_size: how many examples eval scores at a time.
  size_t batch_size = 0;
};

// Reads `path` as ReadModel does (every file verified) and its dense.bin.
// Errors as ReadModel; DataLoss when its job.pbtxt describes no model this
// build can run; FailedPrecondition when its rows do not fit its model; as
// LoadDenseModel for dense.bin.
absl::StatusOr<std::unique_ptr<ScoringModel>> LoadScoringModel(
    const std::string& path);

// The ScoringModel of `loaded` (read by ReadModel, or without rows by a
// reader that keeps them elsewhere) whose rows are read from `rows` (null =
// loaded.sparse): builds its network and reads its dense.bin. Errors as
// LoadScoringModel.
absl::StatusOr<std::unique_ptr<ScoringModel>> ScoringModelOf(
    LoadedModel loaded, std::shared_ptr<const RowSource> rows);

// Per-thread buffers for ScoreBatch, reused across calls.
struct ScoringWorkspace {
  BatchKeys keys;
  std::vector<float> rows;
  std::vector<uint8_t> found;
  // min_feature_count > 1: the keys looked up (the batch's and its slots'
  // rare signs), their rows, and where each key is among them.
  std::vector<uint64_t> probe;
  std::vector<float> probe_rows;
  absl::flat_hash_map<uint64_t, uint32_t> probe_index;
  CtrModel::Workspace model;
};

// Writes the probability of each of batch's examples to probs[0..size()).
// `batch` must have slots for every sign (slots 1..fields of the model) and
// model.dense_inputs floats of dense input per example; its signs may be
// replaced by rare signs (min_feature_count > 1). Labels are ignored. Rows
// are read with one RowSource::Lookup per call (the batch's signs with,
// for min_feature_count > 1, the rare sign of each of its slots).
// Returns the number of the batch's distinct signs the model held a row for,
// or the lookup's error (probs are then unspecified).
// With `pool`, a forward pass big enough (ScoringParts > 0) runs on the
// pool's workers, in arrival order with other calls' (common/fork_join.h),
// after the one lookup on the caller; the probabilities are the same to
// float rounding (Eigen blocks a product by its row count).
absl::StatusOr<size_t> ScoreBatch(const ScoringModel& model, Batch* batch,
                                  float* probs, ScoringWorkspace* ws,
                                  ForkJoinPool* pool = nullptr);

// How a forward pass of `examples` examples of `model` runs on a pool of
// `threads` workers: 0 = on the caller, when it is cheaper than handing it
// over (under about a million multiply-adds: a DeepFM 3x400 example, LR and
// FM below thousands of examples); otherwise in 1..threads parts, each at
// least 16 examples and about a million multiply-adds.
int ScoringParts(const CtrModel& model, size_t examples, int threads);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_SCORING_H_
