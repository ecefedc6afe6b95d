// The one way a trained model turns examples into probabilities, shared by
// `sampan eval` (trainer/eval_job.h) and `sampan serve` (serving/): the
// model's rows for the examples' signs (zeros for signs without a row; with
// min_feature_count > 1 a sign without a row takes its slot's rare sign,
// as the trainer's test set did), then CtrModel::Step's forward pass with
// the model's dense weights. An example's probability depends only on the
// example and the model, never on the other examples of its batch.
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

#include "absl/status/statusor.h"
#include "trainer/batch_keys.h"
#include "trainer/data/batch.h"
#include "trainer/data/formats.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/model_io.h"
#include "trainer/model_version.h"

namespace sampan {

// A model read for scoring: its rows, its network and its dense weights.
struct ScoringModel {
  LoadedModel loaded;
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

// Per-thread buffers for ScoreBatch, reused across calls.
struct ScoringWorkspace {
  BatchKeys keys;
  std::vector<float> rows;
  CtrModel::Workspace model;
};

// Writes the probability of each of batch's examples to probs[0..size()).
// `batch` must have slots for every sign (slots 1..fields of the model) and
// model.dense_inputs floats of dense input per example; its signs may be
// replaced by rare signs (min_feature_count > 1). Labels are ignored.
// Returns the number of the batch's distinct signs the model held a row for.
size_t ScoreBatch(const ScoringModel& model, Batch* batch, float* probs,
                  ScoringWorkspace* ws);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_SCORING_H_
