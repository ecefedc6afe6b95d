// LoadScoringModel, apart from ScoreBatch so that scoring alone links
// without the trainer (tests/fuzz/predict_fuzzer.cc).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "trainer/data_options.h"
#include "trainer/local_job.h"
#include "trainer/scoring.h"

namespace sampan {

absl::StatusOr<std::unique_ptr<ScoringModel>> LoadScoringModel(
    const std::string& path) {
  absl::StatusOr<LoadedModel> loaded = ReadModel(path);
  if (!loaded.ok()) return loaded.status();
  return ScoringModelOf(*std::move(loaded), nullptr);
}

absl::StatusOr<std::unique_ptr<ScoringModel>> ScoringModelOf(
    LoadedModel loaded, std::shared_ptr<const RowSource> rows) {
  auto out = std::make_unique<ScoringModel>();
  out->loaded = std::move(loaded);
  out->rows = std::move(rows);
  const std::string& dir = out->loaded.dir;
  absl::StatusOr<LocalTrainOptions> options =
      LocalOptionsFromJob(out->loaded.config);
  if (!options.ok()) {
    return absl::DataLossError(
        absl::StrCat(dir, "/job.pbtxt: ", options.status().message()));
  }
  out->batch_size = std::max<size_t>(1, options->batch_size);
  out->parse = ParseOptionsFromJob(out->loaded.config);
  out->model = std::make_unique<CtrModel>(options->model);
  const int row_dim =
      out->rows ? out->rows->row_dim() : out->loaded.sparse.row_dim;
  if (row_dim != out->model->row_dim()) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, ": sparse rows of ", row_dim,
        " floats, the model (job.pbtxt) reads ", out->model->row_dim()));
  }
  absl::StatusOr<DenseModelState> dense =
      LoadDenseModel(DenseModelPath(dir), *out->model);
  if (!dense.ok()) return dense.status();
  out->dense = *std::move(dense);
  return out;
}

}  // namespace sampan
