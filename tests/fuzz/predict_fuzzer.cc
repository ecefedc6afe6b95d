// libFuzzer target: arbitrary bytes as a Predict request (a serialized
// PredictRequest, or else newline-separated raw lines) to the handler every
// Predict call runs, ScoreRequest, on a small DeepFM with dense inputs and
// rare signs (min_feature_count 2). Every request must be answered OK, with
// one probability in [0, 1] per example, or INVALID_ARGUMENT; nothing may
// crash, leak or read out of bounds.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/str_split.h"
#include "common/hash.h"
#include "proto/serving.pb.h"
#include "serving/request_batch.h"

namespace {

std::unique_ptr<sampan::ScoringModel> TinyModel() {
  auto m = std::make_unique<sampan::ScoringModel>();
  sampan::CtrModelOptions o;
  o.kind = sampan::CtrKind::kDeepFm;
  o.fields = sampan::kCriteoIntFields + sampan::kCriteoCatFields;
  o.embedding_dim = 4;
  o.hidden = {8};
  o.dense_inputs = sampan::kCriteoIntFields;
  m->model = std::make_unique<sampan::CtrModel>(o);
  m->dense.weights.resize(m->model->dense_size());
  m->model->InitDense(m->dense.weights.data());
  m->parse.format = sampan::DataFileFormat::kCriteo;
  m->parse.int_log_dense = true;
  m->loaded.manifest.min_feature_count = 2;
  sampan::SparseRows& sparse = m->loaded.sparse;
  sparse.row_dim = m->model->row_dim();
  // Rows for a few signs of every slot, and for its rare sign.
  for (int slot = 1; slot <= o.fields; ++slot) {
    for (const char* v : {"", "0", "1", "68fd1e64", "__rare__"}) {
      sparse.index[sampan::FeatureSign(slot, v)] = sparse.index.size();
    }
  }
  sparse.rows.resize(sparse.index.size() * sparse.row_dim);
  for (size_t i = 0; i < sparse.rows.size(); ++i) {
    sparse.rows[i] = float(int(i % 17) - 8) / 64;
  }
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const sampan::ScoringModel* model = TinyModel().release();
  sampan::serving::PredictRequest request;
  if (!request.ParseFromArray(data, int(size))) {
    request.Clear();
    const std::string text(reinterpret_cast<const char*>(data), size);
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      request.add_lines(std::string(line));
    }
  }
  sampan::RequestLimits limits;
  limits.max_examples = 64;
  limits.max_line_bytes = 4096;
  sampan::serving::PredictResponse response;
  const absl::Status s =
      sampan::ScoreRequest(request, *model, limits, &response);
  if (!s.ok()) {
    if (!absl::IsInvalidArgument(s)) __builtin_trap();
    return 0;
  }
  if (response.probabilities_size() !=
      request.lines_size() + request.examples_size()) {
    __builtin_trap();
  }
  for (float p : response.probabilities()) {
    if (!(p >= 0 && p <= 1)) __builtin_trap();
  }
  return 0;
}
