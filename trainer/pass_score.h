// Progressive validation of a data.stream pass: before a pass is trained on,
// the model as it is (what serving holds) scores it, so every pass tells how
// good the model was on the next hour of data.
//
// Each rank scores a sample of its own share of the pass (the batches whose
// hashed position falls below data.stream.progressive_fraction) into a
// coord::PassScore, a mergeable histogram (StreamingAuc's buckets, so the
// AUC is exact up to ties within a bucket of width 1/4096) with sums for
// logloss and COPC; rank 0 merges every rank's score into the pass's
// figures.
#ifndef SAMPAN_TRAINER_PASS_SCORE_H_
#define SAMPAN_TRAINER_PASS_SCORE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "proto/coordinator.pb.h"
#include "trainer/data/rare_signs.h"
#include "trainer/input_queue.h"
#include "trainer/step_loop.h"

namespace sampan {

struct PassScoreOptions {
  const CtrModel* model = nullptr;
  SparseStore* rows = nullptr;   // pulled without creating rows
  const float* dense = nullptr;  // null for models without dense weights
  double fraction = 1;
  uint32_t batch_size = 1024;
  uint64_t pass_index = 0;          // seeds which batches are sampled
  const RareSigns* rare = nullptr;  // data.min_feature_count; may be null
};

// Scores `parts` (read whole, in order).
absl::StatusOr<coord::PassScore> ScorePass(const PassScoreOptions& options,
                                           const std::vector<DataPart>& parts);

// The figures of the merged scores (index and name left unset).
coord::PassResult MergePassScores(const std::vector<coord::PassScore>& scores);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_PASS_SCORE_H_
