#include "trainer/data/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/hash.h"
#include "trainer/data/rare_signs.h"

namespace sampan {

void Dataset::Gather(const uint32_t* index, size_t n, Batch* batch) const {
  // Sized once, then block copies: this runs for every training batch.
  size_t total = 0;
  for (size_t k = 0; k < n; ++k)
    total += offsets[index[k] + 1] - offsets[index[k]];
  batch->labels.resize(n);
  batch->offsets.resize(n + 1);
  batch->signs.resize(total);
  batch->slots.resize(total);
  uint32_t at = 0;
  batch->offsets[0] = 0;
  for (size_t k = 0; k < n; ++k) {
    const uint32_t i = index[k];
    const uint32_t len = offsets[i + 1] - offsets[i];
    batch->labels[k] = labels[i];
    std::memcpy(batch->signs.data() + at, signs.data() + offsets[i],
                len * sizeof(uint64_t));
    std::memcpy(batch->slots.data() + at, slots.data() + offsets[i],
                len * sizeof(uint16_t));
    at += len;
    batch->offsets[k + 1] = at;
  }
  batch->dense_dim = dense_dim;
  batch->dense.resize(n * size_t(dense_dim));
  for (size_t k = 0; k < n && dense_dim > 0; ++k) {
    std::memcpy(batch->dense.data() + k * dense_dim,
                dense.data() + size_t(index[k]) * dense_dim,
                dense_dim * sizeof(float));
  }
}

bool Dataset::AddLine(std::string_view line) {
  dense_dim = DenseDimOf(parse);
  float label = 0;
  if (!ParseLine(line, parse, &label, &signs, &slots, &dense).ok()) {
    ++bad_rows;
    return false;
  }
  labels.push_back(label);
  offsets.push_back(static_cast<uint32_t>(signs.size()));
  return true;
}

void MergeRareSigns(int min_count, Dataset* train,
                    const std::vector<Dataset*>& others) {
  RareSigns rare(min_count);
  rare.Count(train->signs);
  rare.Freeze();
  for (Dataset* d : others) rare.Apply(&d->signs, d->slots);
  rare.Apply(&train->signs, train->slots);
}

absl::StatusOr<std::string> ReadMaybeGzipFile(const std::string& path) {
  // gzread passes non-gzip files through unchanged.
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr)
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  gzbuffer(file, 1 << 20);
  std::string out;
  constexpr size_t kChunk = 1 << 22;
  while (true) {
    const size_t old = out.size();
    out.resize(old + kChunk);
    const int n = gzread(file, out.data() + old, kChunk);
    if (n < 0) {
      int err = 0;
      const std::string msg = gzerror(file, &err);
      gzclose(file);
      return absl::DataLossError(absl::StrCat(path, ": ", msg));
    }
    out.resize(old + n);
    if (n == 0) break;
  }
  gzclose(file);
  return out;
}

absl::Status ForEachFileLine(const std::string& path,
                             const std::function<void(std::string_view)>& fn) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  gzbuffer(file, 1 << 20);
  constexpr size_t kChunk = 1 << 20;
  constexpr size_t kMaxLine = size_t{64} << 20;
  std::string buf;
  size_t begin = 0;  // of the first unfinished line in buf
  uint64_t lines = 0;
  while (true) {
    buf.erase(0, begin);
    begin = 0;
    const size_t old = buf.size();  // scanned: the unfinished line so far
    if (old > kMaxLine) {
      gzclose(file);
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", lines + 1, ": a line longer than ",
                       kMaxLine >> 20, " MiB (is the file text?)"));
    }
    buf.resize(old + kChunk);
    const int n = gzread(file, buf.data() + old, kChunk);
    int err = Z_OK;
    const char* msg = gzerror(file, &err);
    // A truncated gzip stream reads as a short file unless asked.
    if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
      const std::string why = msg;
      gzclose(file);
      return absl::DataLossError(absl::StrCat(path, ": ", why));
    }
    buf.resize(old + n);
    if (n == 0) break;
    for (size_t nl, from = old;
         (nl = buf.find('\n', from)) != std::string::npos;
         begin = from = nl + 1) {
      fn(std::string_view(buf).substr(begin, nl - begin));
      ++lines;
    }
  }
  gzclose(file);
  if (begin < buf.size()) fn(std::string_view(buf).substr(begin));
  return absl::OkStatus();
}

absl::StatusOr<Dataset> LoadDataset(const std::string& path,
                                    const LoadOptions& options) {
  if (options.num_parts < 1 || options.part < 0 ||
      options.part >= options.num_parts) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": bad part ", options.part, " of ", options.num_parts));
  }
  absl::StatusOr<std::string> text = ReadMaybeGzipFile(path);
  if (!text.ok()) return text.status();
  std::vector<std::string_view> lines;
  std::string_view rest(*text);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    if (!line.empty()) lines.push_back(line);
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  if (!lines.empty() && IsHeaderLine(lines[0], options.parse.format)) {
    lines.erase(lines.begin());
  }
  const size_t n = lines.size();
  size_t first = options.part * n / options.num_parts;
  size_t last = (options.part + 1) * n / options.num_parts;
  const size_t span = last - first;
  last = first + static_cast<size_t>(options.end_fraction * span);
  first = first + static_cast<size_t>(options.begin_fraction * span);
  Dataset data;
  data.parse = options.parse;
  data.dense_dim = DenseDimOf(options.parse);
  const size_t kept_lines = last > first ? last - first : 0;
  data.labels.reserve(kept_lines);
  data.offsets.reserve(kept_lines + 1);
  // Criteo rows carry up to 39 signs; a good guess for the other formats.
  data.signs.reserve(kept_lines * 40);
  data.slots.reserve(kept_lines * 40);
  for (size_t i = first; i < last; ++i) data.AddLine(lines[i]);
  const size_t kept = last > first ? last - first : 0;
  if (kept > 0 && data.bad_rows > options.max_bad_fraction * kept) {
    return absl::DataLossError(
        absl::StrFormat("%s: %d of %d lines malformed, above %.2f%%", path,
                        data.bad_rows, kept, 100 * options.max_bad_fraction));
  }
  return data;
}

}  // namespace sampan
