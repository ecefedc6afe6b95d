#include "trainer/scoring.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "trainer/data/rare_signs.h"

namespace sampan {

// Two passes, so that the cache misses overlap instead of following one
// another: each key's hash slot is fetched kAhead keys before it is probed,
// and each row found is fetched when probed and copied in the second pass.
// A batch's rows are spread over a table far larger than the caches; the
// copies were a quarter of ScoreBatch (bench/RESULTS.md).
absl::Status SparseRowSource::Lookup(absl::Span<const uint64_t> keys,
                                     float* rows, uint8_t* found) const {
  constexpr size_t kAhead = 12;
  constexpr uint32_t kNone = ~0u;
  const size_t d = size_t(sparse_->row_dim);
  const auto& index = sparse_->index;
  const float* table = sparse_->rows.data();
  thread_local std::vector<uint32_t> at;
  at.resize(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    if (k + kAhead < keys.size()) index.prefetch(keys[k + kAhead]);
    auto it = index.find(keys[k]);
    if (it == index.end()) {
      at[k] = kNone;
      continue;
    }
    at[k] = it->second;
    const float* row = table + size_t(it->second) * d;
    __builtin_prefetch(row);
    __builtin_prefetch(row + d - 1);
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    found[k] = at[k] != kNone;
    float* out = rows + k * d;
    if (found[k]) {
      std::memcpy(out, table + size_t(at[k]) * d, d * sizeof(float));
    } else {
      std::fill_n(out, d, 0.0f);
    }
  }
  return absl::OkStatus();
}

namespace {

// min_feature_count > 1: looks up the batch's signs and the rare sign of
// each of its slots in one Lookup, replaces each sign without a row by its
// slot's rare sign, and leaves the rows of the keys that remain in ws->rows
// and ws->found.
absl::Status LookUpWithRareSigns(const RowSource& source, Batch* batch,
                                 ScoringWorkspace* ws) {
  const int d = source.row_dim();
  ws->keys.Dedup(*batch);
  ws->probe = ws->keys.keys;
  ws->probe_index.clear();
  for (size_t i = 0; i < ws->probe.size(); ++i) {
    ws->probe_index.emplace(ws->probe[i], uint32_t(i));
  }
  for (uint16_t slot : batch->slots) {
    const uint64_t rare = RareSign(slot);
    if (ws->probe_index.emplace(rare, uint32_t(ws->probe.size())).second) {
      ws->probe.push_back(rare);
    }
  }
  ws->probe_rows.resize(ws->probe.size() * d);
  ws->found.resize(ws->probe.size());
  absl::Status s =
      source.Lookup(ws->probe, ws->probe_rows.data(), ws->found.data());
  if (!s.ok()) return s;
  for (size_t j = 0; j < batch->signs.size(); ++j) {
    if (!ws->found[ws->keys.row_of_sign[j]]) {
      batch->signs[j] = RareSign(batch->slots[j]);
    }
  }
  std::vector<uint8_t> probe_found;
  probe_found.swap(ws->found);
  ws->keys.Dedup(*batch);
  ws->rows.resize(ws->keys.keys.size() * d);
  ws->found.resize(ws->keys.keys.size());
  for (size_t k = 0; k < ws->keys.keys.size(); ++k) {
    const uint32_t at = ws->probe_index.at(ws->keys.keys[k]);
    ws->found[k] = probe_found[at];
    std::copy_n(ws->probe_rows.begin() + size_t(at) * d, d,
                ws->rows.begin() + k * d);
  }
  return absl::OkStatus();
}

// A part's examples, the rows of their signs and its activations: one set
// per thread, reused across calls.
struct PartBuffers {
  Batch batch;
  std::vector<uint32_t> row_of_sign;
  CtrModel::Workspace model;
};

// Step's forward pass over `batch` on the pool's workers, in `parts` parts
// of consecutive examples.
void ForwardOnPool(const ScoringModel& model, const Batch& batch,
                   const std::vector<uint32_t>& row_of_sign, const float* rows,
                   float* probs, int parts, ForkJoinPool* pool) {
  const size_t n = batch.size();
  const float* dense = model.dense.weights.data();
  pool->Run(parts, [&](int p) {
    thread_local PartBuffers part;
    if (parts == 1) {
      model.model->Step(batch, row_of_sign, 0, rows, dense, nullptr, nullptr,
                        probs, &part.model);
      return;
    }
    const size_t begin = n * size_t(p) / size_t(parts);
    const size_t end = n * size_t(p + 1) / size_t(parts);
    part.batch.Clear();
    for (size_t i = begin; i < end; ++i) part.batch.Append(batch, i);
    part.row_of_sign.assign(row_of_sign.begin() + batch.offsets[begin],
                            row_of_sign.begin() + batch.offsets[end]);
    model.model->Step(part.batch, part.row_of_sign, 0, rows, dense, nullptr,
                      nullptr, probs + begin, &part.model);
  });
}

}  // namespace

int ScoringParts(const CtrModel& model, size_t examples, int threads) {
  constexpr double kPartMacs = 1e6;
  constexpr size_t kMinPartExamples = 16;
  const double macs = model.DenseMacsPerExample() +
                      double(model.fields()) * double(model.row_dim());
  if (double(examples) * macs < kPartMacs || threads < 1) return 0;
  const size_t min_part =
      std::max(kMinPartExamples, size_t(std::ceil(kPartMacs / macs)));
  return int(std::clamp<size_t>(examples / min_part, 1, size_t(threads)));
}

absl::StatusOr<size_t> ScoreBatch(const ScoringModel& model, Batch* batch,
                                  float* probs, ScoringWorkspace* ws,
                                  ForkJoinPool* pool) {
  const SparseRowSource in_memory(&model.loaded.sparse);
  const RowSource& source = model.rows ? *model.rows : in_memory;
  if (model.loaded.manifest.min_feature_count > 1) {
    absl::Status s = LookUpWithRareSigns(source, batch, ws);
    if (!s.ok()) return s;
  } else {
    ws->keys.Dedup(*batch);
    ws->rows.resize(ws->keys.keys.size() * source.row_dim());
    ws->found.resize(ws->keys.keys.size());
    absl::Status s =
        source.Lookup(ws->keys.keys, ws->rows.data(), ws->found.data());
    if (!s.ok()) return s;
  }
  const size_t found = std::count(ws->found.begin(), ws->found.end(), 1);
  const int parts = pool == nullptr ? 0
                                    : ScoringParts(*model.model, batch->size(),
                                                   pool->workers());
  if (parts > 0) {
    ForwardOnPool(model, *batch, ws->keys.row_of_sign, ws->rows.data(), probs,
                  parts, pool);
    return found;
  }
  model.model->Step(*batch, ws->keys.row_of_sign, 0, ws->rows.data(),
                    model.dense.weights.data(), nullptr, nullptr, probs,
                    &ws->model);
  return found;
}

}  // namespace sampan
