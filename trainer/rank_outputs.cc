#include "trainer/rank_outputs.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "common/log.h"
#include "trainer/eval/auc.h"
#include "trainer/input_queue.h"
#include "trainer/model/model_io.h"
#include "trainer/model_export.h"
#include "trainer/part_export.h"
#include "trainer/report.h"
#include "trainer/word_job.h"

namespace sampan {

absl::Status ExportRankModel(const RankOutputOptions& o) {
  const JobConfig& config = *o.config;
  const int trainers = config.cluster().num_trainers();
  auto pull = [&o](absl::Span<const uint64_t> keys, float* out) {
    return o.ps->Pull(keys, false, out);
  };
  if (o.words != nullptr) {
    absl::Status s;
    if (o.rank == 0) {
      s = ExportWordVectors(WordVectorsPath(config), *o.vocab,
                            o.words->row_dim() - 1, pull);
    }
    if (s.ok()) s = o.coordinator->Barrier("exported", trainers, o.rank);
    return s;
  }
  absl::Status s =
      ExportTrainerPart(config, o.rank, o.model->row_dim(), pull, o.rare);
  if (s.ok() && o.rank == 0) {
    absl::StatusOr<DenseModelState> state = o.dense->State();
    s = state.ok()
            ? SaveDenseModel(DenseModelPath(ModelDir(config)), *o.model, *state)
            : state.status();
  }
  if (s.ok()) s = o.coordinator->Barrier("exported", trainers, o.rank);
  if (s.ok() && o.rank == 0) {
    ModelManifest manifest;
    manifest.sparse_parts = trainers;
    if (o.rare != nullptr) manifest.min_feature_count = o.rare->min_count();
    s = FinishModelDir(ModelDir(config), config, manifest);
  }
  return s;
}

absl::Status EvaluateTestData(const RankOutputOptions& o) {
  std::vector<float> probs, labels;
  absl::StatusOr<const float*> dense = o.dense->Current();
  if (!dense.ok()) return dense.status();
  Worker w;
  absl::Status s = ReadParts(
      TestPartsOf(*o.config), o.config->data().batch_size(), &w.batch, [&] {
        if (o.rare != nullptr) o.rare->Apply(&w.batch.signs, w.batch.slots);
        absl::Status st = Predict(*o.model, o.rows, *dense, &w);
        if (!st.ok()) return st;
        probs.insert(probs.end(), w.probs.begin(), w.probs.end());
        labels.insert(labels.end(), w.batch.labels.begin(),
                      w.batch.labels.end());
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  const EvalMetrics m = Evaluate(probs, labels);
  SAMPAN_LOG(INFO) << absl::StrFormat("test AUC %.4f logloss %.4f on %d rows",
                                      m.auc, m.logloss, m.rows);
  return WriteResultFile(ResultPath(*o.config), m);
}

}  // namespace sampan
