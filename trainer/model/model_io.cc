#include "trainer/model/model_io.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "absl/strings/str_cat.h"
#include "zlib.h"

namespace sampan {
namespace {

constexpr char kMagic[8] = {'S', 'A', 'M', 'P', 'D', 'N', 'S', '\0'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 8 + 4;

uint32_t Crc32(const char* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large bodies in pieces.
  while (n > 0) {
    const uInt chunk = n > (1u << 30) ? (1u << 30) : uInt(n);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    n -= chunk;
  }
  return uint32_t(crc);
}

// Appends plain little-endian values (every target is little-endian x86-64).
class Writer {
 public:
  template <typename T>
  void Put(T v) {
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  void PutString(const std::string& s) {
    Put(uint32_t(s.size()));
    buf_ += s;
  }
  void PutFloats(const std::vector<float>& v) {
    buf_.append(reinterpret_cast<const char*>(v.data()),
                v.size() * sizeof(float));
  }
  std::string& buf() { return buf_; }

 private:
  std::string buf_;
};

// Reads values back; every Get fails once the data runs out.
class Reader {
 public:
  Reader(const char* data, size_t n) : p_(data), end_(data + n) {}
  template <typename T>
  bool Get(T* v) {
    if (size_t(end_ - p_) < sizeof(T)) return false;
    std::memcpy(v, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s) {
    uint32_t n;
    if (!Get(&n) || size_t(end_ - p_) < n) return false;
    s->assign(p_, n);
    p_ += n;
    return true;
  }
  bool GetFloats(size_t n, std::vector<float>* v) {
    if (size_t(end_ - p_) / sizeof(float) < n) return false;
    v->resize(n);
    std::memcpy(v->data(), p_, n * sizeof(float));
    p_ += n * sizeof(float);
    return true;
  }
  bool AtEnd() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

std::string Shape(int rows, int cols) { return absl::StrCat(rows, "x", cols); }

std::string Body(const CtrModel& model, const DenseModelState& state) {
  Writer w;
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
  w.PutFloats(state.weights);
  for (const std::vector<float>& s : state.optimizer.slots) w.PutFloats(s);
  return std::move(w.buf());
}

absl::Status WriteFileAtomically(const std::string& path,
                                 const std::string& data) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
  }
  const bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size() &&
                  std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::UnavailableError(
        absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

// Checks the model description at the front of the body against `model`.
absl::Status CheckModel(const std::string& path, const CtrModel& model,
                        Reader* r) {
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

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open dense model file ",
                                            path, ": ", std::strerror(errno)));
  }
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return data;
}

// Validates the fixed header and the CRC; returns the body's extent.
absl::Status CheckHeader(const std::string& path, const std::string& data) {
  if (data.size() < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat(
        path, ": truncated (", data.size(),
        " bytes, a dense model file has at least ", kHeaderBytes, ")"));
  }
  if (std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError(
        absl::StrCat(path, " is not a dense model file (bad magic)"));
  }
  Reader r(data.data() + 8, kHeaderBytes - 8);
  uint32_t version, crc;
  uint64_t body;
  r.Get(&version);
  r.Get(&body);
  r.Get(&crc);
  if (version != kVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is dense model format version ", version,
                     ", this build reads version ", kVersion));
  }
  if (data.size() - kHeaderBytes != body) {
    return absl::DataLossError(absl::StrCat(
        path, ": truncated or padded (body of ", data.size() - kHeaderBytes,
        " bytes, the header says ", body, ")"));
  }
  if (Crc32(data.data() + kHeaderBytes, body) != crc) {
    return absl::DataLossError(
        absl::StrCat(path, ": corrupt (CRC32 of the body does not match)"));
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
  const std::string body = Body(model, state);
  Writer header;
  header.buf().append(kMagic, sizeof(kMagic));
  header.Put(kVersion);
  header.Put(uint64_t(body.size()));
  header.Put(Crc32(body.data(), body.size()));
  return WriteFileAtomically(path, header.buf() + body);
}

absl::StatusOr<DenseModelState> LoadDenseModel(const std::string& path,
                                               const CtrModel& model) {
  absl::StatusOr<std::string> data = ReadFile(path);
  if (!data.ok()) return data.status();
  if (absl::Status s = CheckHeader(path, *data); !s.ok()) return s;
  Reader r(data->data() + kHeaderBytes, data->size() - kHeaderBytes);
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
  bool ok = r.GetFloats(model.dense_size(), &state.weights);
  for (std::vector<float>& s : state.optimizer.slots) {
    ok = ok && r.GetFloats(model.dense_size(), &s);
  }
  if (!ok || !r.AtEnd()) {
    return absl::DataLossError(
        absl::StrCat(path, ": weight payload does not match ",
                     model.dense_size(), " floats x ", 1 + slots));
  }
  return state;
}

}  // namespace sampan
