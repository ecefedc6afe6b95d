#include "trainer/eval_job.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
#include "trainer/model_version.h"

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

// A model read for scoring: its rows, its network and its dense weights.
struct ScoredModel {
  LoadedModel loaded;
  std::unique_ptr<CtrModel> model;
  DenseModelState dense;
  size_t batch_size = 0;
};

absl::StatusOr<ScoredModel> LoadForScoring(const std::string& path) {
  ScoredModel out;
  absl::StatusOr<LoadedModel> loaded = ReadModel(path);
  if (!loaded.ok()) return loaded.status();
  out.loaded = *std::move(loaded);
  const std::string& dir = out.loaded.dir;
  absl::StatusOr<LocalTrainOptions> options =
      LocalOptionsFromJob(out.loaded.config);
  if (!options.ok()) {
    return absl::DataLossError(
        absl::StrCat(dir, "/job.pbtxt: ", options.status().message()));
  }
  out.batch_size = options->batch_size;
  out.model = std::make_unique<CtrModel>(options->model);
  if (out.loaded.sparse.row_dim != out.model->row_dim()) {
    return absl::FailedPreconditionError(absl::StrCat(
        dir, ": sparse rows of ", out.loaded.sparse.row_dim,
        " floats, the model (job.pbtxt) reads ", out.model->row_dim()));
  }
  absl::StatusOr<DenseModelState> dense =
      LoadDenseModel(DenseModelPath(dir), *out.model);
  if (!dense.ok()) return dense.status();
  out.dense = *std::move(dense);
  return out;
}

std::string VersionScored(const LoadedModel& model) {
  return model.version.has_value() ? DescribeModel(model) : "";
}

// FNV-1a, 64 bits, of `n` bytes.
uint64_t Fnv1a64(const void* data, size_t n) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

absl::StatusOr<EvalMetrics> EvaluateModel(const std::string& model_path,
                                          const std::string& data_path,
                                          std::string* version) {
  absl::StatusOr<ScoredModel> m = LoadForScoring(model_path);
  if (!m.ok()) return m.status();
  if (version != nullptr) *version = VersionScored(m->loaded);
  SAMPAN_LOG(INFO) << "eval: " << DescribeModel(m->loaded) << ": "
                   << m->loaded.sparse.index.size() << " sparse rows, "
                   << m->dense.weights.size() << " dense weights; reading "
                   << data_path;
  const LoadOptions load = LoadOptionsFromJob(m->loaded.config);
  absl::StatusOr<Dataset> data = LoadDataset(data_path, load);
  if (!data.ok()) return data.status();
  if (data->size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(data_path, ": no rows to evaluate"));
  }
  if (m->loaded.manifest.min_feature_count > 1) {
    MergeUnknownSigns(m->loaded.sparse, &*data);
  }
  return Score(*m->model, m->dense.weights, m->loaded.sparse, *data,
               std::max<size_t>(1, m->batch_size));
}

absl::Status WriteModelRows(const std::string& model_path, std::ostream* out,
                            std::string* version) {
  absl::StatusOr<ScoredModel> m = LoadForScoring(model_path);
  if (!m.ok()) return m.status();
  if (version != nullptr) *version = VersionScored(m->loaded);
  const SparseRows& sparse = m->loaded.sparse;
  std::vector<std::pair<uint64_t, uint32_t>> rows(sparse.index.begin(),
                                                  sparse.index.end());
  std::sort(rows.begin(), rows.end());
  const int d = sparse.row_dim;
  std::string line;
  for (const auto& [key, i] : rows) {
    const float* row = sparse.rows.data() + size_t(i) * d;
    if (std::all_of(row, row + d, [](float x) { return x == 0.0f; })) {
      continue;  // no row, as model versions read it
    }
    line = absl::StrCat(key, "\t");
    for (int j = 0; j < d; ++j) {
      uint32_t bits;
      std::memcpy(&bits, row + j, sizeof(bits));
      absl::StrAppendFormat(&line, j == 0 ? "%08x" : " %08x", bits);
    }
    *out << line << '\n';
  }
  const std::vector<float>& w = m->dense.weights;
  *out << absl::StrFormat("dense\t%d weights\tfnv1a64 %016x\n", w.size(),
                          Fnv1a64(w.data(), w.size() * sizeof(float)));
  if (!*out) return absl::UnavailableError("cannot write the rows");
  return absl::OkStatus();
}

}  // namespace sampan
