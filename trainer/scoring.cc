#include "trainer/scoring.h"

#include <algorithm>

#include "trainer/data/rare_signs.h"

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
