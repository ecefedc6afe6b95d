// `sampan eval MODEL DATA`: scores a model on a data file of the format the
// model was trained on (plain or gzip), with the same code as the trainers'
// own test evaluation: per batch, the model's rows for the batch's signs
// (zeros for signs without a row), then CtrModel::Step. MODEL is an exported
// model directory (trainer/model_export.h), a model version directory or a
// versions root (its LATEST; trainer/model_version.h).
//
// `sampan model-rows MODEL`: the same model's rows and dense weights as
// text, so that two models can be compared bit for bit.
#ifndef SAMPAN_TRAINER_EVAL_JOB_H_
#define SAMPAN_TRAINER_EVAL_JOB_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/eval/auc.h"

namespace sampan {

// NotFound/DataLoss/FailedPrecondition naming the file when the model or the
// data is missing, malformed or of another shape. `version`, when not null,
// receives the version scored ("v-000042 (delta on base v-000040, pass
// 20261201/05) in ROOT"), or is emptied for an exported model directory.
// `probs`, when not null, receives each row's probability in file order
// (trainer/scoring.h ScoreBatch, as `sampan serve` computes them).
absl::StatusOr<EvalMetrics> EvaluateModel(const std::string& model,
                                          const std::string& data_path,
                                          std::string* version = nullptr,
                                          std::vector<float>* probs = nullptr);

// Writes one line per sparse row, sorted by key: the key in decimal, a tab,
// then the row's floats as their IEEE-754 bits in hex ("3f800000 80000000");
// rows of all zeros are left out (versions cannot tell them from no row).
// Then "dense\t<N> weights\tfnv1a64 <16 hex digits>" over the dense
// weights' bytes. Errors as EvaluateModel.
absl::Status WriteModelRows(const std::string& model, std::ostream* out,
                            std::string* version = nullptr);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_EVAL_JOB_H_
