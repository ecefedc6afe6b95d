// `sampan eval MODEL DATA`: scores an exported model (model_export.h) on a
// data file of the format the model was trained on (plain or gzip), with the
// same code as the trainers' own test evaluation: per batch, the model's
// rows for the batch's signs (zeros for signs without a row), then
// CtrModel::Step.
#ifndef SAMPAN_TRAINER_EVAL_JOB_H_
#define SAMPAN_TRAINER_EVAL_JOB_H_

#include <string>

#include "absl/status/statusor.h"
#include "trainer/eval/auc.h"

namespace sampan {

// NotFound/DataLoss/FailedPrecondition naming the file when the model
// directory or the data is missing, malformed or of another shape.
absl::StatusOr<EvalMetrics> EvaluateExportedModel(const std::string& model_dir,
                                                  const std::string& data_path);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_EVAL_JOB_H_
