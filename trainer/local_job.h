// `sampan train-local JOB.yaml`: runs a job's model in one process with an
// in-process table (trainer/local_trainer.h) on data.train_files[0], testing
// on data.test_files[0] or, without one, on the last
// data.holdout_fraction of the training file; with data.validation_fraction
// the tail of the training part is a validation set for early stopping. Prints
// the test metrics and writes them to <output_dir>/result.txt like `sampan
// run`, and the curves (ten test evaluations during training) to
// <output_dir>/report.html, and exports the model to <output_dir>/model
// (model_export.h) for `sampan eval`.
#ifndef SAMPAN_TRAINER_LOCAL_JOB_H_
#define SAMPAN_TRAINER_LOCAL_JOB_H_

#include "absl/status/status.h"
#include "proto/job.pb.h"
#include "trainer/data_options.h"
#include "trainer/local_trainer.h"

namespace sampan {

// The local-training options a job config asks for.
absl::StatusOr<LocalTrainOptions> LocalOptionsFromJob(const JobConfig& config);

// Trains and scores the job's model in this process (word vectors too). The
// test set is also scored `curve_points` times during training, evenly
// spaced, for report.html's curves (0: only at the end); that scoring is
// training time, so benchmarks that compare speed pass 0.
absl::Status TrainLocalJob(const JobConfig& config, int curve_points = 10);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_LOCAL_JOB_H_
