// data.min_feature_count in `sampan run`: before it trains, every trainer
// counts the signs of the job's training rows (every rank's parts for one
// epoch: each row once, the rows train-local counts; with
// data.holdout_fraction, of the files' heads only), so that all of them
// hold the same RareSigns (trainer/data/rare_signs.h) without talking to
// each other, and a restarted trainer counts the same again. The cost is
// one read of the training data per trainer at start and a count per
// distinct sign in memory: meant for data that fits that; at scale, the
// table's admission (table.admission.min_pushes) is the streaming
// counterpart.
#ifndef SAMPAN_TRAINER_RARE_COUNT_H_
#define SAMPAN_TRAINER_RARE_COUNT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"
#include "trainer/data/rare_signs.h"

namespace sampan {

// Null when data.min_feature_count is 0 or 1 (every sign keeps its row).
absl::StatusOr<std::unique_ptr<RareSigns>> CountJobSigns(
    const JobConfig& config);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_RARE_COUNT_H_
