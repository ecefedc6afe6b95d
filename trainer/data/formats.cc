#include "trainer/data/formats.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"

namespace sampan {
namespace {

constexpr int kCriteoLabeledFields = 1 + kCriteoIntFields + kCriteoCatFields;
constexpr int kAvazuColumns = 24;
constexpr size_t kMaxQuoted = 40;

// The field's text as it appears in error messages: escaped and truncated.
// (This absl build's string_view is its own type, not std::string_view.)
std::string Quote(std::string_view field) {
  const size_t n = std::min(field.size(), kMaxQuoted);
  std::string out = "\"";
  out += absl::CHexEscape(absl::string_view(field.data(), n));
  if (n < field.size()) out += "...";
  out += '"';
  return out;
}

absl::Status FieldError(std::string_view field_name, std::string_view expected,
                        std::string_view got) {
  return absl::InvalidArgumentError(absl::StrCat(
      "field ", absl::string_view(field_name.data(), field_name.size()),
      ": expected ", absl::string_view(expected.data(), expected.size()),
      ", got ", Quote(got)));
}

int64_t SlowBucket(int64_t v) {
  if (v <= 2) return v;
  const double l = std::log(static_cast<double>(v));
  return static_cast<int64_t>(std::floor(l * l));
}

// Most Criteo integers are small: a table spares a log() per field.
constexpr int64_t kBucketTable = 4096;
const int16_t* BucketTable() {
  static const int16_t* table = [] {
    auto* t = new int16_t[kBucketTable];
    for (int64_t v = 0; v < kBucketTable; ++v) t[v] = SlowBucket(v);
    return t;
  }();
  return table;
}

inline int64_t Bucket(int64_t v) {
  static const int16_t* const table = BucketTable();
  return v >= 0 && v < kBucketTable ? table[v] : SlowBucket(v);
}

inline float LogDense(int64_t v) {
  const double x = static_cast<double>(v);
  return static_cast<float>(x >= 0 ? std::log1p(x) : -std::log1p(-x));
}

// Splits `line` on `sep` into at most `max` fields; returns the field count
// (which may exceed max: the extra fields are counted, not stored).
int Split(std::string_view line, char sep, std::string_view* fields, int max) {
  int n = 0;
  const char* p = line.data();
  const char* const end = p + line.size();
  // A plain byte loop: fields are a few bytes long, too short for memchr's
  // call to pay off.
  const char* field_start = p;
  for (; p != end; ++p) {
    if (*p != sep) continue;
    if (n < max) fields[n] = std::string_view(field_start, p - field_start);
    ++n;
    field_start = p + 1;
  }
  if (n < max) fields[n] = std::string_view(field_start, end - field_start);
  return n + 1;
}

// `dense` is null when the options ask for no dense inputs; `slots` may be.
absl::Status ParseCriteo(std::string_view line, bool labeled,
                         const ParseOptions& o, float* label,
                         std::vector<uint64_t>* signs,
                         std::vector<uint16_t>* slots,
                         std::vector<float>* dense) {
  const int expected =
      labeled ? kCriteoLabeledFields : kCriteoLabeledFields - 1;
  std::string_view fields[kCriteoLabeledFields];
  const int n = Split(line, '\t', fields, expected);
  if (n != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", expected, " tab-separated fields, got ", n));
  }

  int f = 0;
  float row_label = 0;
  if (labeled) {
    const std::string_view l = fields[f++];
    if (l.size() != 1 || (l[0] != '0' && l[0] != '1')) {
      return absl::InvalidArgumentError(
          absl::StrCat("label: expected 0 or 1, got ", Quote(l)));
    }
    row_label = l[0] == '1' ? 1.0f : 0.0f;
  }

  uint64_t out[kCriteoIntFields + kCriteoCatFields];
  uint16_t out_slots[kCriteoIntFields + kCriteoCatFields];
  float out_dense[kCriteoIntFields];
  int k = 0;
  for (int i = 0; i < kCriteoIntFields; ++i, ++f) {
    const std::string_view field = fields[f];
    const uint32_t slot = static_cast<uint32_t>(i + 1);
    out_dense[i] = 0;
    if (field.empty()) {
      if (!o.empty_field_signs || !o.int_buckets) continue;
      out_slots[k] = static_cast<uint16_t>(slot);
      out[k++] = FeatureSign(slot, field);
      continue;
    }
    int64_t v = 0;
    const auto [ptr, ec] =
        std::from_chars(field.data(), field.data() + field.size(), v);
    if (ec != std::errc() || ptr != field.data() + field.size()) {
      return FieldError(absl::StrCat("I", i + 1), "integer", field);
    }
    if (dense != nullptr) out_dense[i] = LogDense(v);
    if (!o.int_buckets) continue;
    // Small values keep their own signs ("s"): ln(v)^2 buckets 0..2 would
    // otherwise merge 1 with 3 and 4, and 2 with 5 (0.0024 test AUC for LR
    // on Criteo 137k), and these are the commonest values.
    char buf[24];
    buf[0] = v <= 2 ? 's' : 'b';
    const auto res = std::to_chars(buf + 1, buf + sizeof(buf), Bucket(v));
    out_slots[k] = static_cast<uint16_t>(slot);
    out[k++] = FeatureSign(slot, std::string_view(buf, res.ptr - buf));
  }
  for (int i = 0; i < kCriteoCatFields; ++i, ++f) {
    const std::string_view field = fields[f];
    if (field.empty() && !o.empty_field_signs) continue;
    out_slots[k] = static_cast<uint16_t>(kCriteoIntFields + 1 + i);
    out[k++] =
        FeatureSign(static_cast<uint32_t>(kCriteoIntFields + 1 + i), field);
  }
  signs->insert(signs->end(), out, out + k);
  if (slots != nullptr) slots->insert(slots->end(), out_slots, out_slots + k);
  if (dense != nullptr) {
    dense->insert(dense->end(), out_dense, out_dense + kCriteoIntFields);
  }
  *label = row_label;
  return absl::OkStatus();
}

// Appends nothing until the whole line is known to be good.
absl::Status ParseAvazu(std::string_view line, float* label,
                        std::vector<uint64_t>* signs,
                        std::vector<uint16_t>* slots) {
  std::string_view f[kAvazuColumns];
  const int n = Split(line, ',', f, kAvazuColumns);
  if (n != kAvazuColumns && n != kAvazuColumns - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", kAvazuColumns, " comma-separated fields (",
                     kAvazuColumns - 1, " without click), got ", n));
  }
  const bool labeled = n == kAvazuColumns;
  int c = 1;
  float row_label = 0;
  if (labeled) {
    if (f[1] != "0" && f[1] != "1") {
      return FieldError("click", "0 or 1", f[1]);
    }
    row_label = f[1] == "1" ? 1.0f : 0.0f;
    c = 2;
  }
  const std::string_view hour = f[c];
  if (hour.size() < 2) return FieldError("hour", "YYMMDDHH", hour);
  signs->push_back(FeatureSign(1, hour.substr(hour.size() - 2)));
  slots->push_back(1);
  for (int k = c + 1, slot = 2; k < n; ++k, ++slot) {
    signs->push_back(FeatureSign(slot, f[k]));
    slots->push_back(slot);
  }
  *label = row_label;
  return absl::OkStatus();
}

// libsvm (ffm = false) or libffm (ffm = true): the label, then tokens. On
// error the caller drops what was appended.
absl::Status ParseSvm(std::string_view line, bool ffm, float* label,
                      std::vector<uint64_t>* signs,
                      std::vector<uint16_t>* slots) {
  const size_t first = line.find_first_of(" \t");
  const std::string_view l = line.substr(0, first);
  // LIBSVM's own data sets write "+1"; from_chars takes no plus sign.
  const std::string_view number =
      l.size() > 1 && l[0] == '+' && l[1] != '-' ? l.substr(1) : l;
  double y = 0;
  const auto r =
      std::from_chars(number.data(), number.data() + number.size(), y);
  if (l.empty() || r.ec != std::errc() ||
      r.ptr != number.data() + number.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("label: expected a number, got ", Quote(l)));
  }
  size_t pos = first;
  for (int token = 1; pos < line.size(); ++token) {
    pos = line.find_first_not_of(" \t", pos);
    if (pos == std::string_view::npos) break;
    const size_t end = line.find_first_of(" \t", pos);
    std::string_view tok =
        line.substr(pos, end == std::string_view::npos ? std::string_view::npos
                                                       : end - pos);
    pos = end;
    const std::string name = absl::StrCat("feature ", token);
    uint32_t slot = 1;
    if (ffm) {
      const size_t colon = tok.find(':');
      if (colon == std::string_view::npos) {
        return FieldError(name, "field:index[:value]", tok);
      }
      const auto fr = std::from_chars(tok.data(), tok.data() + colon, slot);
      if (fr.ec != std::errc() || fr.ptr != tok.data() + colon ||
          slot >= 65535) {
        return FieldError(name, "a field number below 65535", tok);
      }
      ++slot;
      tok.remove_prefix(colon + 1);
    }
    const std::string_view idx = tok.substr(0, tok.find(':'));
    if (idx.empty()) return FieldError(name, "an index", tok);
    signs->push_back(FeatureSign(slot, idx));
    slots->push_back(static_cast<uint16_t>(slot));
  }
  *label = y > 0 ? 1.0f : 0.0f;
  return absl::OkStatus();
}

bool IsCriteo(DataFileFormat format) {
  return format == DataFileFormat::kCriteo ||
         format == DataFileFormat::kCriteoUnlabeled;
}

bool IsTextSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
         c == '\r';
}

// Where `s` stops being UTF-8 (s.size() when it is valid): shortest forms
// only, no surrogates, nothing past U+10FFFF.
size_t Utf8Error(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    if (c == 0) return i;  // a NUL is no text (and ends C strings)
    if (c < 0x80) {
      ++i;
      continue;
    }
    int n = 0;
    uint32_t min = 0, cp = 0;
    if ((c & 0xe0) == 0xc0) {
      n = 1, min = 0x80, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, min = 0x800, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, min = 0x10000, cp = c & 0x07;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;
    for (int k = 1; k <= n; ++k) {
      const unsigned char cc = s[i + k];
      if ((cc & 0xc0) != 0x80) return i;
      cp = cp << 6 | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += n + 1;
  }
  return i;
}

absl::Status ParseText(std::string_view line, std::vector<uint64_t>* signs,
                       std::vector<uint16_t>* slots) {
  return ForEachTextToken(line, [&](std::string_view token) {
    signs->push_back(FeatureSign(kTextSlot, token));
    slots->push_back(kTextSlot);
  });
}

}  // namespace

absl::Status ForEachTextToken(std::string_view line,
                              const std::function<void(std::string_view)>& fn) {
  const size_t bad = Utf8Error(line);
  if (bad != line.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("text: not valid UTF-8 (or a NUL) at byte ", bad + 1, " (",
                     Quote(line.substr(bad, 8)), ")"));
  }
  size_t tokens = 0;
  for (size_t i = 0; i < line.size();) {
    while (i < line.size() && IsTextSpace(line[i])) ++i;
    if (i == line.size()) break;
    while (i < line.size() && !IsTextSpace(line[i])) ++i;
    ++tokens;
  }
  if (tokens > kMaxTextTokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "text: ", tokens, " tokens on one line, more than ", kMaxTextTokens,
        "; put each sentence or document on its own line"));
  }
  for (size_t i = 0; i < line.size();) {
    while (i < line.size() && IsTextSpace(line[i])) ++i;
    if (i == line.size()) break;
    const size_t begin = i;
    while (i < line.size() && !IsTextSpace(line[i])) ++i;
    fn(line.substr(begin, i - begin));
  }
  return absl::OkStatus();
}

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
    case DataFileFormat::kText:
      return 1;
  }
  return 0;
}

int DenseDimOf(const ParseOptions& options) {
  return IsCriteo(options.format) && options.int_log_dense ? kCriteoIntFields
                                                           : 0;
}

bool IsHeaderLine(std::string_view line, DataFileFormat format) {
  return format == DataFileFormat::kAvazu && line.substr(0, 3) == "id,";
}

absl::Status ParseLine(std::string_view line, const ParseOptions& options,
                       float* label, std::vector<uint64_t>* signs,
                       std::vector<uint16_t>* slots,
                       std::vector<float>* dense) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (IsCriteo(options.format)) {
    return ParseCriteo(line, options.format == DataFileFormat::kCriteo, options,
                       label, signs, slots,
                       DenseDimOf(options) > 0 ? dense : nullptr);
  }
  const size_t before = signs->size();
  if (options.format == DataFileFormat::kText) *label = 0;
  const absl::Status status =
      options.format == DataFileFormat::kText ? ParseText(line, signs, slots)
      : options.format == DataFileFormat::kAvazu
          ? ParseAvazu(line, label, signs, slots)
          : ParseSvm(line, options.format == DataFileFormat::kLibffm, label,
                     signs, slots);
  if (!status.ok()) {
    signs->resize(before);
    slots->resize(before);
  }
  return status;
}

absl::Status ParseCriteoLine(std::string_view line, bool labeled, float* label,
                             std::vector<uint64_t>* signs,
                             std::vector<uint16_t>* slots,
                             bool empty_field_signs) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  ParseOptions o;
  o.empty_field_signs = empty_field_signs;
  return ParseCriteo(line, labeled, o, label, signs, slots, nullptr);
}

}  // namespace sampan
