#include "trainer/model/model_io.h"

#include "absl/strings/str_cat.h"
#include "trainer/model/checked_file.h"

namespace sampan {
namespace {

constexpr char kMagic[8] = {'S', 'A', 'M', 'P', 'D', 'N', 'S', '\0'};
constexpr FileKind kDenseFile = {kMagic, 1, "dense model file"};

std::string Shape(int rows, int cols) { return absl::StrCat(rows, "x", cols); }

std::string Body(const CtrModel& model, const DenseModelState& state) {
  BodyWriter w;
  w.Put(uint32_t(model.kind()));
  w.Put(uint32_t(model.fields()));
  w.Put(uint32_t(model.embedding_dim()));
  const std::vector<DenseBlock> blocks = model.DenseBlocks();
  w.Put(uint32_t(blocks.size()));
  for (const DenseBlock& b : blocks) {
    w.PutString(b.name);
    w.Put(uint32_t(b.rows));
    w.Put(uint32_t(b.cols));
  }
  w.Put(uint32_t(state.optimizer.rule));
  w.Put(int64_t(state.optimizer.steps));
  w.Put(uint32_t(state.optimizer.slots.size()));
  w.PutArray(state.weights);
  for (const std::vector<float>& s : state.optimizer.slots) w.PutArray(s);
  return std::move(w.buf());
}

// Checks the model description at the front of the body against `model`.
absl::Status CheckModel(const std::string& path, const CtrModel& model,
                        BodyReader* r) {
  const auto truncated = [&path] {
    return absl::DataLossError(absl::StrCat(path, ": model header cut short"));
  };
  uint32_t kind, fields, dim, count;
  if (!r->Get(&kind) || !r->Get(&fields) || !r->Get(&dim) || !r->Get(&count)) {
    return truncated();
  }
  if (kind != uint32_t(model.kind())) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " holds a ",
        kind <= uint32_t(CtrKind::kDcnV2) ? CtrKindName(CtrKind(kind)) : "?",
        " model, expected ", CtrKindName(model.kind())));
  }
  if (fields != uint32_t(model.fields()) ||
      dim != uint32_t(model.embedding_dim())) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " holds ", fields, " fields of embedding_dim ", dim,
        ", expected ", model.fields(), " of ", model.embedding_dim()));
  }
  const std::vector<DenseBlock> blocks = model.DenseBlocks();
  for (uint32_t i = 0; i < count || i < blocks.size(); ++i) {
    std::string name;
    uint32_t rows = 0, cols = 0;
    if (i < count && !(r->GetString(&name) && r->Get(&rows) && r->Get(&cols))) {
      return truncated();
    }
    if (i >= count || i >= blocks.size()) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, " has ", count, " dense blocks, the model ", blocks.size(),
          " (first unmatched: ", i < count ? name : blocks[i].name, ")"));
    }
    const DenseBlock& b = blocks[i];
    if (name != b.name || rows != uint32_t(b.rows) ||
        cols != uint32_t(b.cols)) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": dense block ", i, " is ", name, " ", Shape(rows, cols),
          ", the model expects ", b.name, " ", Shape(b.rows, b.cols)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

const char* CtrKindName(CtrKind kind) {
  switch (kind) {
    case CtrKind::kLr:
      return "LR";
    case CtrKind::kFm:
      return "FM";
    case CtrKind::kDnn:
      return "DNN";
    case CtrKind::kWideDeep:
      return "WIDE_DEEP";
    case CtrKind::kDeepFm:
      return "DEEPFM";
    case CtrKind::kDcnV2:
      return "DCN_V2";
  }
  return "?";
}

absl::Status SaveDenseModel(const std::string& path, const CtrModel& model,
                            const DenseModelState& state) {
  if (state.weights.size() != model.dense_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("saving ", path, ": ", state.weights.size(),
                     " dense weights, the model has ", model.dense_size()));
  }
  for (const std::vector<float>& s : state.optimizer.slots) {
    if (s.size() != model.dense_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("saving ", path, ": an optimizer slot of ", s.size(),
                       " floats, the model has ", model.dense_size()));
    }
  }
  return WriteCheckedFile(path, kDenseFile, Body(model, state));
}

absl::StatusOr<DenseModelState> LoadDenseModel(const std::string& path,
                                               const CtrModel& model) {
  absl::StatusOr<std::string> body = ReadCheckedFile(path, kDenseFile);
  if (!body.ok()) return body.status();
  BodyReader r(*body);
  if (absl::Status s = CheckModel(path, model, &r); !s.ok()) return s;
  DenseModelState state;
  uint32_t rule = 0, slots = 0;
  if (!r.Get(&rule) || !r.Get(&state.optimizer.steps) || !r.Get(&slots) ||
      rule > uint32_t(DenseRule::kAdam) || slots > 2) {
    return absl::DataLossError(
        absl::StrCat(path, ": bad optimizer header (rule ", rule, ")"));
  }
  state.optimizer.rule = DenseRule(rule);
  state.optimizer.slots.resize(slots);
  bool ok = r.GetArray(model.dense_size(), &state.weights);
  for (std::vector<float>& s : state.optimizer.slots) {
    ok = ok && r.GetArray(model.dense_size(), &s);
  }
  if (!ok || !r.AtEnd()) {
    return absl::DataLossError(
        absl::StrCat(path, ": weight payload does not match ",
                     model.dense_size(), " floats x ", 1 + slots));
  }
  return state;
}

}  // namespace sampan
