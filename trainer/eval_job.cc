#include "trainer/eval_job.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/log.h"
#include "trainer/batch_keys.h"
#include "trainer/data/dataset.h"
#include "trainer/data/rare_signs.h"
#include "trainer/data_options.h"
#include "trainer/local_job.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/model_io.h"
#include "trainer/model_export.h"

namespace sampan {
namespace {

// As MergeRareSigns did for the trainer's test set: a sign the model has no
// row for takes its slot's rare sign.
void MergeUnknownSigns(const SparseRows& sparse, Dataset* data) {
  for (size_t j = 0; j < data->signs.size(); ++j) {
    if (!sparse.index.contains(data->signs[j])) {
      data->signs[j] = RareSign(data->slots[j]);
    }
  }
}

// Copies the rows of `keys`, zeros for keys without one.
void LookUp(const SparseRows& sparse, const std::vector<uint64_t>& keys,
            std::vector<float>* rows) {
  const int d = sparse.row_dim;
  rows->assign(keys.size() * d, 0.0f);
  for (size_t k = 0; k < keys.size(); ++k) {
    auto it = sparse.index.find(keys[k]);
    if (it == sparse.index.end()) continue;
    std::copy_n(sparse.rows.begin() + size_t(it->second) * d, d,
                rows->begin() + k * d);
  }
}

EvalMetrics Score(const CtrModel& model, const std::vector<float>& dense,
                  const SparseRows& sparse, const Dataset& data,
                  size_t batch_size) {
  BatchKeys keys;
  Batch batch;
  CtrModel::Workspace ws;
  std::vector<float> rows, probs(data.size());
  std::vector<uint32_t> index(batch_size);
  for (size_t begin = 0; begin < data.size(); begin += batch_size) {
    const size_t n = std::min(batch_size, data.size() - begin);
    std::iota(index.begin(), index.begin() + n, uint32_t(begin));
    data.Gather(index.data(), n, &batch);
    keys.Dedup(batch);
    LookUp(sparse, keys.keys, &rows);
    model.Step(batch, keys.row_of_sign, 0, rows.data(), dense.data(), nullptr,
               nullptr, probs.data() + begin, &ws);
  }
  return Evaluate(probs, data.labels);
}

}  // namespace

absl::StatusOr<EvalMetrics> EvaluateExportedModel(
    const std::string& model_dir, const std::string& data_path) {
  JobConfig config;
  absl::StatusOr<ModelManifest> manifest =
      ReadModelManifest(model_dir, &config);
  if (!manifest.ok()) return manifest.status();
  absl::StatusOr<LocalTrainOptions> options = LocalOptionsFromJob(config);
  if (!options.ok()) {
    return absl::DataLossError(
        absl::StrCat(model_dir, "/job.pbtxt: ", options.status().message()));
  }
  const CtrModel model(options->model);
  absl::StatusOr<DenseModelState> dense =
      LoadDenseModel(DenseModelPath(model_dir), model);
  if (!dense.ok()) return dense.status();
  absl::StatusOr<SparseRows> sparse =
      ReadSparseRows(model_dir, *manifest, model.row_dim());
  if (!sparse.ok()) return sparse.status();
  SAMPAN_LOG(INFO) << "eval: " << model_dir << ": " << sparse->index.size()
                   << " sparse rows, " << dense->weights.size()
                   << " dense weights; reading " << data_path;
  const LoadOptions load = LoadOptionsFromJob(config);
  absl::StatusOr<Dataset> data = LoadDataset(data_path, load);
  if (!data.ok()) return data.status();
  if (data->size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(data_path, ": no rows to evaluate"));
  }
  if (manifest->min_feature_count > 1) MergeUnknownSigns(*sparse, &*data);
  return Score(model, dense->weights, *sparse, *data,
               std::max<size_t>(1, options->batch_size));
}

}  // namespace sampan
