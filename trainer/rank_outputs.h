// What a trainer rank leaves behind when a batch job has trained (after
// the "trained" barrier): its part of the exported model, and rank 0's
// score of the test data.
//
// Thread safety: called from the trainer's thread once training is over.
#ifndef SAMPAN_TRAINER_RANK_OUTPUTS_H_
#define SAMPAN_TRAINER_RANK_OUTPUTS_H_

#include "absl/status/status.h"
#include "coordinator/client.h"
#include "proto/job.pb.h"
#include "trainer/client/ps_client.h"
#include "trainer/data/rare_signs.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/word2vec.h"
#include "trainer/rank_dense.h"
#include "trainer/step_loop.h"

namespace sampan {

// None owned; every pointer set except `rare` (data.min_feature_count) and,
// for CTR models, `vocab` and `words`; word vectors need no `dense` or
// `rows`.
struct RankOutputOptions {
  const JobConfig* config = nullptr;
  int rank = 0;
  CoordinatorClient* coordinator = nullptr;
  PsClient* ps = nullptr;
  const CtrModel* model = nullptr;
  RankDense* dense = nullptr;
  SparseStore* rows = nullptr;
  const RareSigns* rare = nullptr;
  const Vocabulary* vocab = nullptr;
  const WordModel* words = nullptr;
};

// The exported model (trainer/part_export.h): this rank's part of the rows;
// rank 0 also the dense weights and, once every rank has exported (the
// "exported" barrier), the model directory's manifest. Word vectors: rank
// 0 writes them (WordVectorsPath), then the barrier.
absl::Status ExportRankModel(const RankOutputOptions& o);

// Rank 0: scores the test files (or the training files' held-out tails)
// with the trained model, pulling rows without creating them as `sampan
// eval` scores an export, logs AUC and log loss and writes the result file.
absl::Status EvaluateTestData(const RankOutputOptions& o);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_RANK_OUTPUTS_H_
