#include "trainer/model_export.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/file_digest.h"
#include "google/protobuf/text_format.h"
#include "trainer/model/checked_file.h"

namespace sampan {
namespace {

constexpr char kSparseMagic[8] = {'S', 'A', 'M', 'P', 'S', 'P', 'R', '\0'};
constexpr FileKind kSparseFile = {kSparseMagic, 1, "sparse model part"};
// Keys read per call, so that a pull stays a moderate message.
constexpr size_t kChunk = 1 << 16;

std::string PartPath(const std::string& dir, int part) {
  return absl::StrFormat("%s/sparse-%05d.bin", dir, part);
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path,
                                         const std::string& what) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", what));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<ModelManifest> ParseManifest(const std::string& path,
                                            const std::string& text) {
  ModelManifest m;
  bool versioned = false;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    std::pair<std::string, std::string> kv = absl::StrSplit(line, '=');
    int value = 0;
    if (!absl::SimpleAtoi(kv.second, &value)) {
      return absl::DataLossError(absl::StrCat(
          path, ":", line_no, ": expected name=integer, got '", line, "'"));
    }
    if (kv.first == "sampan_model") {
      if (value != 1) {
        return absl::FailedPreconditionError(absl::StrCat(
            path, ": model format ", value, ", this build reads 1"));
      }
      versioned = true;
    } else if (kv.first == "sparse_parts") {
      m.sparse_parts = value;
    } else if (kv.first == "min_feature_count") {
      m.min_feature_count = value;
    }
  }
  if (!versioned || m.sparse_parts < 1) {
    return absl::DataLossError(absl::StrCat(
        path, ": expected lines sampan_model=1 and sparse_parts=N (N >= 1)"));
  }
  return m;
}

absl::StatusOr<SparsePart> ReadPart(const std::string& path, int row_dim,
                                    const std::string& dim_from) {
  absl::StatusOr<std::string> body = ReadCheckedFile(path, kSparseFile);
  if (!body.ok()) return body.status();
  BodyReader r(*body);
  uint32_t dim = 0;
  uint64_t n = 0;
  if (!r.Get(&dim) || !r.Get(&n)) {
    return absl::DataLossError(absl::StrCat(path, ": header cut short"));
  }
  if (row_dim != 0 && dim != uint32_t(row_dim)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, " has rows of ", dim, " floats, ", dim_from, " reads ", row_dim));
  }
  SparsePart out;
  out.row_dim = int(dim);
  if (!r.GetArray(n, &out.keys) || !r.GetArray(n * dim, &out.rows) ||
      !r.AtEnd()) {
    return absl::DataLossError(
        absl::StrCat(path, ": payload does not hold ", n, " rows"));
  }
  return out;
}

// Adds one part's rows to `out`, whose row_dim is 0 until the first part
// sets it; `dim_from` says where out->row_dim came from, for errors.
absl::Status ReadPartInto(const std::string& path, const std::string& dim_from,
                          SparseRows* out) {
  absl::StatusOr<SparsePart> part = ReadPart(path, out->row_dim, dim_from);
  if (!part.ok()) return part.status();
  const size_t dim = part->row_dim;
  out->row_dim = int(dim);
  for (size_t i = 0; i < part->keys.size(); ++i) {
    // Parts may share keys; their rows were read after the last push, so
    // they are equal and the first one stands.
    if (out->index.emplace(part->keys[i], uint32_t(out->index.size())).second) {
      out->rows.insert(out->rows.end(), part->rows.begin() + i * dim,
                       part->rows.begin() + (i + 1) * dim);
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string ModelDir(const JobConfig& config) {
  return absl::StrCat(config.output_dir(), "/model");
}

std::string DenseModelPath(const std::string& dir) {
  return absl::StrCat(dir, "/dense.bin");
}

absl::Status ExportSparsePart(const std::string& dir, int part,
                              std::vector<uint64_t> keys, int row_dim,
                              const RowReader& read, bool drop_zero_rows) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  std::sort(keys.begin(), keys.end());
  std::vector<float> rows(keys.size() * row_dim);
  for (size_t begin = 0; begin < keys.size(); begin += kChunk) {
    const size_t n = std::min(kChunk, keys.size() - begin);
    absl::Status s = read(absl::MakeConstSpan(keys.data() + begin, n),
                          rows.data() + begin * row_dim);
    if (!s.ok()) return s;
  }
  if (drop_zero_rows) {
    size_t kept = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      const float* r = &rows[i * row_dim];
      if (std::all_of(r, r + row_dim, [](float v) { return v == 0.0f; })) {
        continue;
      }
      keys[kept] = keys[i];
      std::copy_n(r, row_dim, &rows[kept * row_dim]);
      ++kept;
    }
    keys.resize(kept);
    rows.resize(kept * row_dim);
  }
  BodyWriter w;
  w.Put(uint32_t(row_dim));
  w.Put(uint64_t(keys.size()));
  w.PutArray(keys);
  w.PutArray(rows);
  return WriteCheckedFile(PartPath(dir, part), kSparseFile, w.buf());
}

absl::Status FinishModelDir(const std::string& dir, const JobConfig& config,
                            const ModelManifest& manifest) {
  std::string job;
  google::protobuf::TextFormat::PrintToString(config, &job);
  absl::Status s = WriteFileDurably(absl::StrCat(dir, "/job.pbtxt"), job);
  if (!s.ok()) return s;
  return WriteFileDurably(
      absl::StrCat(dir, "/MODEL"),
      absl::StrFormat("sampan_model=1\nsparse_parts=%d\nmin_feature_count=%d\n",
                      manifest.sparse_parts, manifest.min_feature_count));
}

absl::StatusOr<ModelManifest> ReadModelManifest(const std::string& dir,
                                                JobConfig* config) {
  const std::string path = absl::StrCat(dir, "/MODEL");
  absl::StatusOr<std::string> text = ReadTextFile(
      path, "not an exported model directory (or its export did not finish)");
  if (!text.ok()) return text.status();
  absl::StatusOr<ModelManifest> m = ParseManifest(path, *text);
  if (!m.ok()) return m.status();
  const std::string job_path = absl::StrCat(dir, "/job.pbtxt");
  absl::StatusOr<std::string> job =
      ReadTextFile(job_path, "an exported model needs its job config");
  if (!job.ok()) return job.status();
  if (!google::protobuf::TextFormat::ParseFromString(*job, config)) {
    return absl::DataLossError(
        absl::StrCat(job_path, ": not a JobConfig text proto"));
  }
  return m;
}

absl::StatusOr<SparseRows> ReadSparseRows(const std::string& dir,
                                          const ModelManifest& manifest,
                                          int row_dim) {
  SparseRows out;
  out.row_dim = row_dim;
  for (int part = 0; part < manifest.sparse_parts; ++part) {
    absl::Status s = ReadPartInto(
        PartPath(dir, part),
        row_dim > 0 ? "the model (job.pbtxt)" : PartPath(dir, 0), &out);
    if (!s.ok()) return s;
  }
  return out;
}

absl::StatusOr<SparsePart> ReadSparsePart(const std::string& dir, int part,
                                          int row_dim) {
  return ReadPart(PartPath(dir, part), row_dim, "the model (job.pbtxt)");
}

absl::StatusOr<std::unique_ptr<SparsePartReader>> SparsePartReader::Open(
    const std::string& dir, int part, int row_dim) {
  const std::string path = PartPath(dir, part);
  absl::StatusOr<std::unique_ptr<CheckedFileReader>> file =
      CheckedFileReader::Open(path, kSparseFile);
  if (!file.ok()) return file.status();
  char head[sizeof(uint32_t) + 8];
  uint32_t dim = 0;
  uint64_t n = 0;
  absl::Status s =
      (*file)->body_bytes() < sizeof(head)
          ? absl::DataLossError(absl::StrCat(path, ": header cut short"))
          : (*file)->Read(0, sizeof(head), head);
  if (!s.ok()) return s;
  std::memcpy(&dim, head, 4);
  std::memcpy(&n, head + 4, 8);
  if (row_dim != 0 && dim != uint32_t(row_dim)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " has rows of ", dim,
                     " floats, the model (job.pbtxt)"
                     " reads ",
                     row_dim));
  }
  if (dim == 0 || n > (*file)->body_bytes() ||
      (*file)->body_bytes() !=
          sizeof(head) + n * (8 + uint64_t(dim) * sizeof(float))) {
    return absl::DataLossError(
        absl::StrCat(path, ": payload does not hold ", n, " rows"));
  }
  return std::unique_ptr<SparsePartReader>(
      new SparsePartReader(*std::move(file), int(dim), n));
}

absl::StatusOr<bool> SparsePartReader::Next(size_t max_rows,
                                            SparsePart* chunk) {
  const size_t n = size_t(std::min<uint64_t>(max_rows, rows_ - next_));
  const size_t d = size_t(row_dim_);
  chunk->row_dim = row_dim_;
  chunk->keys.resize(n);
  chunk->rows.resize(n * d);
  if (n == 0) return false;
  const uint64_t head = sizeof(uint32_t) + 8;
  absl::Status s = file_->Read(head + next_ * 8, n * 8,
                               reinterpret_cast<char*>(chunk->keys.data()));
  if (s.ok()) {
    s = file_->Read(head + rows_ * 8 + next_ * d * sizeof(float),
                    n * d * sizeof(float),
                    reinterpret_cast<char*>(chunk->rows.data()));
  }
  if (!s.ok()) return s;
  next_ += n;
  return true;
}

absl::StatusOr<uint64_t> CountSparseRows(const std::string& dir,
                                         const ModelManifest& manifest) {
  uint64_t rows = 0;
  for (int part = 0; part < manifest.sparse_parts; ++part) {
    const std::string path = PartPath(dir, part);
    absl::StatusOr<std::string> head =
        ReadCheckedFileHead(path, kSparseFile, sizeof(uint32_t) + 8);
    if (!head.ok()) return head.status();
    BodyReader r(*head);
    uint32_t dim = 0;
    uint64_t n = 0;
    if (!r.Get(&dim) || !r.Get(&n)) {
      return absl::DataLossError(absl::StrCat(path, ": header cut short"));
    }
    rows += n;
  }
  return rows;
}

}  // namespace sampan
