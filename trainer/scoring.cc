#include "trainer/scoring.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "trainer/data/rare_signs.h"
#include "trainer/data_options.h"
#include "trainer/local_job.h"

namespace sampan {
namespace {

// Copies the rows of `keys`, zeros for keys without one; returns how many
// keys had one.
size_t LookUp(const SparseRows& sparse, const std::vector<uint64_t>& keys,
              std::vector<float>* rows) {
  const int d = sparse.row_dim;
  rows->assign(keys.size() * d, 0.0f);
  size_t found = 0;
  for (size_t k = 0; k < keys.size(); ++k) {
    auto it = sparse.index.find(keys[k]);
    if (it == sparse.index.end()) continue;
    ++found;
    std::copy_n(sparse.rows.begin() + size_t(it->second) * d, d,
                rows->begin() + k * d);
  }
  return found;
}

}  // namespace

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

size_t ScoreBatch(const ScoringModel& model, Batch* batch, float* probs,
                  ScoringWorkspace* ws) {
  const SparseRows& sparse = model.loaded.sparse;
  if (model.loaded.manifest.min_feature_count > 1) {
    for (size_t j = 0; j < batch->signs.size(); ++j) {
      if (!sparse.index.contains(batch->signs[j])) {
        batch->signs[j] = RareSign(batch->slots[j]);
      }
    }
  }
  ws->keys.Dedup(*batch);
  const size_t found = LookUp(sparse, ws->keys.keys, &ws->rows);
  model.model->Step(*batch, ws->keys.row_of_sign, 0, ws->rows.data(),
                    model.dense.weights.data(), nullptr, nullptr, probs,
                    &ws->model);
  return found;
}

}  // namespace sampan
