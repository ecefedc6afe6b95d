#include "trainer/data/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/hash.h"
#include "trainer/data/criteo_reader.h"

namespace sampan {
namespace {

constexpr int kAvazuColumns = 24;

// Splits `line` on `sep` into at most `max` fields; returns the field count
// (which may exceed max: the extra fields are counted, not stored).
int Split(std::string_view line, char sep, std::string_view* fields, int max) {
  int n = 0;
  const char* p = line.data();
  const char* const end = p + line.size();
  while (true) {
    const char* s = static_cast<const char*>(std::memchr(p, sep, end - p));
    const char* field_end = s != nullptr ? s : end;
    if (n < max) fields[n] = std::string_view(p, field_end - p);
    ++n;
    if (s == nullptr) return n;
    p = s + 1;
  }
}

bool ParseAvazu(std::string_view line, bool labeled, float* label,
                std::vector<uint64_t>* signs, std::vector<uint16_t>* slots) {
  std::string_view f[kAvazuColumns];
  const int expected = labeled ? kAvazuColumns : kAvazuColumns - 1;
  if (Split(line, ',', f, kAvazuColumns) != expected) return false;
  int c = 1;
  *label = 0;
  if (labeled) {
    if (f[1] != "0" && f[1] != "1") return false;
    *label = f[1] == "1" ? 1.0f : 0.0f;
    c = 2;
  }
  const std::string_view hour = f[c];
  if (hour.size() < 2) return false;
  signs->push_back(FeatureSign(1, hour.substr(hour.size() - 2)));
  slots->push_back(1);
  for (int k = c + 1, slot = 2; k < expected; ++k, ++slot) {
    signs->push_back(FeatureSign(slot, f[k]));
    slots->push_back(slot);
  }
  return true;
}

// libsvm (ffm = false) or libffm (ffm = true) tokens after the label.
bool ParseSvm(std::string_view line, bool ffm, float* label,
              std::vector<uint64_t>* signs, std::vector<uint16_t>* slots) {
  const size_t first = line.find_first_of(" \t");
  const std::string_view l = line.substr(0, first);
  double y = 0;
  const auto r = std::from_chars(l.data(), l.data() + l.size(), y);
  if (l.empty() || r.ec != std::errc() || r.ptr != l.data() + l.size()) {
    return false;
  }
  *label = y > 0 ? 1.0f : 0.0f;
  size_t pos = first;
  while (pos != std::string_view::npos && pos < line.size()) {
    pos = line.find_first_not_of(" \t", pos);
    if (pos == std::string_view::npos) break;
    size_t end = line.find_first_of(" \t", pos);
    std::string_view tok =
        line.substr(pos, end == std::string_view::npos ? std::string_view::npos
                                                       : end - pos);
    pos = end;
    uint32_t slot = 1;
    if (ffm) {
      const size_t colon = tok.find(':');
      if (colon == std::string_view::npos) return false;
      const auto fr = std::from_chars(tok.data(), tok.data() + colon, slot);
      if (fr.ec != std::errc() || fr.ptr != tok.data() + colon ||
          slot >= 65535) {
        return false;
      }
      ++slot;
      tok.remove_prefix(colon + 1);
    }
    const std::string_view idx = tok.substr(0, tok.find(':'));
    if (idx.empty()) return false;
    signs->push_back(FeatureSign(slot, idx));
    slots->push_back(static_cast<uint16_t>(slot));
  }
  return true;
}

}  // namespace

int FieldsOf(DataFileFormat format) {
  switch (format) {
    case DataFileFormat::kCriteo:
    case DataFileFormat::kCriteoUnlabeled:
      return kCriteoIntFields + kCriteoCatFields;
    case DataFileFormat::kAvazu:
      return kAvazuColumns - 2;
    case DataFileFormat::kLibsvm:
      return 1;
    case DataFileFormat::kLibffm:
      return 0;
  }
  return 0;
}

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

bool Dataset::AddLine(std::string_view line, DataFileFormat format) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t before = signs.size();
  float label = 0;
  bool ok = false;
  switch (format) {
    case DataFileFormat::kCriteo:
    case DataFileFormat::kCriteoUnlabeled:
      ok = ParseCriteoLine(line, format == DataFileFormat::kCriteo, &label,
                           &signs, &slots, empty_field_signs)
               .ok() &&
           CriteoIntegers(line, format == DataFileFormat::kCriteo, before);
      break;
    case DataFileFormat::kAvazu:
      ok = ParseAvazu(line, true, &label, &signs, &slots) ||
           (signs.resize(before), slots.resize(before),
            ParseAvazu(line, false, &label, &signs, &slots));
      break;
    case DataFileFormat::kLibsvm:
    case DataFileFormat::kLibffm:
      ok = ParseSvm(line, format == DataFileFormat::kLibffm, &label, &signs,
                    &slots);
      break;
  }
  if (!ok) {
    signs.resize(before);
    slots.resize(before);
    ++bad_rows;
    return false;
  }
  labels.push_back(label);
  offsets.push_back(static_cast<uint32_t>(signs.size()));
  return true;
}

bool Dataset::CriteoIntegers(std::string_view line, bool labeled,
                             size_t row_start) {
  if (!int_buckets) {
    // The parser puts the integer fields' signs (slots 1..13) first.
    size_t end = row_start;
    while (end < slots.size() && slots[end] <= kCriteoIntFields) ++end;
    signs.erase(signs.begin() + row_start, signs.begin() + end);
    slots.erase(slots.begin() + row_start, slots.begin() + end);
  }
  if (dense_dim == 0) return true;
  // ParseCriteoLine accepted the line, so the fields are well-formed.
  std::string_view rest = line;
  if (labeled) rest.remove_prefix(rest.find('\t') + 1);
  for (int i = 0; i < kCriteoIntFields; ++i) {
    const size_t tab = rest.find('\t');
    const std::string_view field = rest.substr(0, tab);
    double v = 0;
    if (!field.empty()) v = std::strtod(std::string(field).c_str(), nullptr);
    dense.push_back(float(v >= 0 ? std::log1p(v) : -std::log1p(-v)));
    rest.remove_prefix(tab + 1);
  }
  return true;
}

void MergeRareSigns(int min_count, Dataset* train,
                    const std::vector<Dataset*>& others) {
  absl::flat_hash_map<uint64_t, uint32_t> count;
  for (uint64_t s : train->signs) ++count[s];
  auto remap = [&](Dataset* d) {
    for (size_t j = 0; j < d->signs.size(); ++j) {
      auto it = count.find(d->signs[j]);
      if (it == count.end() || it->second < uint32_t(min_count)) {
        d->signs[j] = FeatureSign(d->slots[j], "__rare__");
      }
    }
  };
  for (Dataset* d : others) remap(d);
  remap(train);
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
  if (options.format == DataFileFormat::kAvazu && !lines.empty() &&
      lines[0].substr(0, 3) == "id,") {
    lines.erase(lines.begin());
  }
  const size_t n = lines.size();
  size_t first = options.part * n / options.num_parts;
  size_t last = (options.part + 1) * n / options.num_parts;
  const size_t span = last - first;
  last = first + static_cast<size_t>(options.end_fraction * span);
  first = first + static_cast<size_t>(options.begin_fraction * span);
  Dataset data;
  const bool criteo = options.format == DataFileFormat::kCriteo ||
                      options.format == DataFileFormat::kCriteoUnlabeled;
  data.int_buckets = options.int_buckets || !criteo;
  data.empty_field_signs = options.empty_field_signs;
  data.dense_dim = criteo && options.int_log_dense ? kCriteoIntFields : 0;
  const size_t kept_lines = last > first ? last - first : 0;
  data.labels.reserve(kept_lines);
  data.offsets.reserve(kept_lines + 1);
  // Criteo rows carry up to 39 signs; a good guess for the other formats.
  data.signs.reserve(kept_lines * 40);
  data.slots.reserve(kept_lines * 40);
  for (size_t i = first; i < last; ++i) data.AddLine(lines[i], options.format);
  const size_t kept = last > first ? last - first : 0;
  if (kept > 0 && data.bad_rows > options.max_bad_fraction * kept) {
    return absl::DataLossError(
        absl::StrFormat("%s: %d of %d lines malformed, above %.2f%%", path,
                        data.bad_rows, kept, 100 * options.max_bad_fraction));
  }
  return data;
}

}  // namespace sampan
