#include "trainer/eval_job.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "trainer/data/dataset.h"
#include "trainer/data_options.h"
#include "trainer/model_version.h"
#include "trainer/scoring.h"

namespace sampan {
namespace {

// Scores every example of `data` through ScoreBatch, data.batch_size at a
// time, as the trainers' test evaluation batches it.
absl::StatusOr<EvalMetrics> Score(const ScoringModel& model,
                                  const Dataset& data,
                                  std::vector<float>* probs_out) {
  const size_t batch_size = model.batch_size;
  ScoringWorkspace ws;
  Batch batch;
  std::vector<float> local;
  std::vector<float>& probs = probs_out != nullptr ? *probs_out : local;
  probs.assign(data.size(), 0.0f);
  std::vector<uint32_t> index(batch_size);
  for (size_t begin = 0; begin < data.size(); begin += batch_size) {
    const size_t n = std::min(batch_size, data.size() - begin);
    std::iota(index.begin(), index.begin() + n, uint32_t(begin));
    data.Gather(index.data(), n, &batch);
    absl::StatusOr<size_t> found =
        ScoreBatch(model, &batch, probs.data() + begin, &ws);
    if (!found.ok()) return found.status();
  }
  return Evaluate(probs, data.labels);
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
                                          std::string* version,
                                          std::vector<float>* probs) {
  absl::StatusOr<std::unique_ptr<ScoringModel>> m =
      LoadScoringModel(model_path);
  if (!m.ok()) return m.status();
  if (version != nullptr) *version = VersionScored((*m)->loaded);
  SAMPAN_LOG(INFO) << "eval: " << DescribeModel((*m)->loaded) << ": "
                   << (*m)->loaded.sparse.index.size() << " sparse rows, "
                   << (*m)->dense.weights.size() << " dense weights; reading "
                   << data_path;
  const LoadOptions load = LoadOptionsFromJob((*m)->loaded.config);
  absl::StatusOr<Dataset> data = LoadDataset(data_path, load);
  if (!data.ok()) return data.status();
  if (data->size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(data_path, ": no rows to evaluate"));
  }
  return Score(**m, *data, probs);
}

absl::Status WriteModelRows(const std::string& model_path, std::ostream* out,
                            std::string* version) {
  absl::StatusOr<std::unique_ptr<ScoringModel>> m =
      LoadScoringModel(model_path);
  if (!m.ok()) return m.status();
  if (version != nullptr) *version = VersionScored((*m)->loaded);
  const SparseRows& sparse = (*m)->loaded.sparse;
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
  const std::vector<float>& w = (*m)->dense.weights;
  *out << absl::StrFormat("dense\t%d weights\tfnv1a64 %016x\n", w.size(),
                          Fnv1a64(w.data(), w.size() * sizeof(float)));
  if (!*out) return absl::UnavailableError("cannot write the rows");
  return absl::OkStatus();
}

}  // namespace sampan
