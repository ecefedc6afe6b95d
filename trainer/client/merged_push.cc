#include "trainer/client/merged_push.h"

#include <string>

namespace sampan {

void MergedPush::Clear() {
  index.Clear();
  indexed = 0;
  keys.clear();
  grads.clear();
  shows.clear();
  clicks.clear();
}

void MergedPush::Swap(MergedPush& other) {
  std::swap(index, other.index);
  std::swap(indexed, other.indexed);
  keys.swap(other.keys);
  grads.swap(other.grads);
  shows.swap(other.shows);
  clicks.swap(other.clicks);
  std::swap(oldest, other.oldest);
  index.Rebind(&keys);
  other.index.Rebind(&other.keys);
}

void MergedPush::Append(absl::Span<const uint64_t> in_keys,
                        const float* in_grads, const float* in_shows,
                        const float* in_clicks,
                        const std::vector<uint32_t>& positions, uint32_t dim) {
  keys.reserve(keys.size() + positions.size());
  grads.reserve(grads.size() + positions.size() * dim);
  for (uint32_t i : positions) {
    AppendOne(in_keys[i], in_grads + size_t{i} * dim, in_shows[i], in_clicks[i],
              dim);
  }
}

void MergedPush::AppendOne(uint64_t key, const float* grad, float show,
                           float click, uint32_t dim) {
  keys.push_back(key);
  grads.insert(grads.end(), grad, grad + dim);
  shows.push_back(show);
  clicks.push_back(click);
}

void MergedPush::Merge(absl::Span<const uint64_t> in_keys,
                       const float* in_grads, const float* in_shows,
                       const float* in_clicks,
                       const std::vector<uint32_t>& positions, uint32_t dim) {
  // A key appended twice unindexed keeps both entries (the first one takes
  // later merges); the pserver sums them.
  index.Reserve(keys.size() + positions.size());
  for (; indexed < keys.size(); ++indexed) {
    if (index.Find(keys[indexed]) == index.kEmpty) {
      index.Insert(keys[indexed], uint32_t(indexed));
    }
  }
  for (uint32_t i : positions) {
    const uint32_t at = index.Find(in_keys[i]);
    if (at == index.kEmpty) {
      AppendOne(in_keys[i], in_grads + size_t{i} * dim, in_shows[i],
                in_clicks[i], dim);
      index.Insert(in_keys[i], uint32_t(indexed++));
      continue;
    }
    float* merged = &grads[size_t{at} * dim];
    const float* g = in_grads + size_t{i} * dim;
    for (uint32_t f = 0; f < dim; ++f) merged[f] += g[f];
    shows[at] += in_shows[i];
    clicks[at] += in_clicks[i];
  }
}

std::vector<std::pair<uint32_t, ps::PushRequest>> SplitPush(
    const ps::PushRequest& request, uint32_t row_dim, uint32_t groups,
    absl::FunctionRef<uint32_t(uint64_t)> group) {
  std::vector<std::vector<uint32_t>> positions(groups);
  for (int i = 0; i < request.keys_size(); ++i) {
    positions[group(request.keys(i))].push_back(i);
  }
  std::vector<std::pair<uint32_t, ps::PushRequest>> pieces;
  const size_t row_bytes = size_t{row_dim} * sizeof(float);
  for (uint32_t g = 0; g < groups; ++g) {
    if (positions[g].empty()) continue;
    ps::PushRequest& piece = pieces.emplace_back(g, ps::PushRequest()).second;
    piece.set_table_id(request.table_id());
    piece.set_writer_id(request.writer_id());
    piece.set_sequence(request.sequence());
    piece.set_partial_ok(request.partial_ok());
    std::string* grads = piece.mutable_grads();
    grads->reserve(positions[g].size() * row_bytes);
    for (uint32_t i : positions[g]) {
      piece.add_keys(request.keys(i));
      piece.add_shows(request.shows(i));
      piece.add_clicks(request.clicks(i));
      grads->append(request.grads(), i * row_bytes, row_bytes);
    }
  }
  return pieces;
}

}  // namespace sampan
