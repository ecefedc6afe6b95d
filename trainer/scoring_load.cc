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
  auto out = std::make_unique<ScoringModel>();
  absl::StatusOr<LoadedModel> loaded = ReadModel(path);
  if (!loaded.ok()) return loaded.status();
  out->loaded = *std::move(loaded);
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
  if (out->loaded.sparse.row_dim != out->model->row_dim()) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, ": sparse rows of ", out->loaded.sparse.row_dim,
        " floats, the model (job.pbtxt) reads ", out->model->row_dim()));
  }
  absl::StatusOr<DenseModelState> dense =
      LoadDenseModel(DenseModelPath(dir), *out->model);
  if (!dense.ok()) return dense.status();
  out->dense = *std::move(dense);
  return out;
}

}  // namespace sampan
