#include "trainer/data/criteo_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"

namespace sampan {
namespace {

constexpr int kLabeledFields = 1 + kCriteoIntFields + kCriteoCatFields;
constexpr size_t kReadBlock = size_t{1} << 22;  // 4 MiB
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

inline std::string_view StripCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

absl::Status ParseCriteoLine(std::string_view line, bool labeled, float* label,
                             std::vector<uint64_t>* signs) {
  return ParseCriteoLine(line, labeled, label, signs, nullptr);
}

absl::Status ParseCriteoLine(std::string_view line, bool labeled, float* label,
                             std::vector<uint64_t>* signs,
                             std::vector<uint16_t>* slots,
                             bool empty_field_signs) {
  line = StripCr(line);
  const int expected = labeled ? kLabeledFields : kLabeledFields - 1;

  // Split on tabs; count every field but keep only the first `expected`.
  std::string_view fields[kLabeledFields];
  int n = 0;
  const char* p = line.data();
  const char* const end = p + line.size();
  // A plain byte loop: fields are a few bytes long, too short for memchr's
  // call to pay off.
  const char* field_start = p;
  for (; p != end; ++p) {
    if (*p != '\t') continue;
    if (n < expected)
      fields[n] = std::string_view(field_start, p - field_start);
    ++n;
    field_start = p + 1;
  }
  if (n < expected)
    fields[n] = std::string_view(field_start, end - field_start);
  ++n;
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
  int k = 0;
  for (int i = 0; i < kCriteoIntFields; ++i, ++f) {
    const std::string_view field = fields[f];
    if (field.empty()) {
      if (!empty_field_signs) continue;
      out_slots[k] = static_cast<uint16_t>(i + 1);
      out[k++] = FeatureSign(static_cast<uint32_t>(i + 1), field);
      continue;
    }
    int64_t v = 0;
    const auto [ptr, ec] =
        std::from_chars(field.data(), field.data() + field.size(), v);
    if (ec != std::errc() || ptr != field.data() + field.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "field I", i + 1, ": expected integer, got ", Quote(field)));
    }
    // Small values keep their own signs ("s"): ln(v)^2 buckets 0..2 would
    // otherwise merge 1 with 3 and 4, and 2 with 5 (0.0024 test AUC for LR
    // on Criteo 137k), and these are the commonest values.
    char buf[24];
    buf[0] = v <= 2 ? 's' : 'b';
    const auto res = std::to_chars(buf + 1, buf + sizeof(buf), Bucket(v));
    out_slots[k] = static_cast<uint16_t>(i + 1);
    out[k++] = FeatureSign(static_cast<uint32_t>(i + 1),
                           std::string_view(buf, res.ptr - buf));
  }
  for (int i = 0; i < kCriteoCatFields; ++i, ++f) {
    const std::string_view field = fields[f];
    if (field.empty() && !empty_field_signs) continue;
    out_slots[k] = static_cast<uint16_t>(kCriteoIntFields + 1 + i);
    out[k++] =
        FeatureSign(static_cast<uint32_t>(kCriteoIntFields + 1 + i), field);
  }
  signs->insert(signs->end(), out, out + k);
  if (slots != nullptr) slots->insert(slots->end(), out_slots, out_slots + k);
  *label = row_label;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CriteoReader>> CriteoReader::Open(
    const std::string& path, const CriteoReaderOptions& options) {
  if (options.num_parts < 1 || options.part < 0 ||
      options.part >= options.num_parts) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": bad part ", options.part, " of ", options.num_parts));
  }
  FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  }
  struct stat st;
  if (fstat(fileno(file), &st) != 0) {
    const int err = errno;
    std::fclose(file);
    return absl::ErrnoToStatus(err, absl::StrCat("cannot stat ", path));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  unsigned char magic[2] = {0, 0};
  const bool gzip = std::fread(magic, 1, 2, file) == 2 && magic[0] == 0x1f &&
                    magic[1] == 0x8b;
  if (gzip) {
    std::fclose(file);
    return OpenGzip(path, options, size);
  }
  std::rewind(file);
  auto offset = [&](int part) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(size) * part /
                                 options.num_parts);
  };
  const uint64_t begin = offset(options.part);
  const uint64_t end = offset(options.part + 1);

  // The part starts at the first line start at or after `begin`: offset 0,
  // or the byte after the first newline at or after begin - 1. Count the
  // newlines before it for absolute line numbers.
  uint64_t start = 0;
  uint64_t lines_before = 0;
  if (begin > 0) {
    start = size;
    std::vector<char> block(std::min<uint64_t>(kReadBlock, size));
    uint64_t off = 0;
    bool found = false;
    while (!found && off < size) {
      const size_t n = std::fread(block.data(), 1, block.size(), file);
      if (n == 0) {
        if (std::ferror(file)) {
          const int err = errno;
          std::fclose(file);
          return absl::ErrnoToStatus(err, absl::StrCat("cannot read ", path));
        }
        break;
      }
      const char* p = block.data();
      const char* const e = p + n;
      while (p < e) {
        const char* nl = static_cast<const char*>(std::memchr(p, '\n', e - p));
        if (nl == nullptr) break;
        ++lines_before;
        const uint64_t nl_off = off + static_cast<uint64_t>(nl - block.data());
        if (nl_off + 1 >= begin) {
          start = nl_off + 1;
          found = true;
          break;
        }
        p = nl + 1;
      }
      off += n;
    }
  }
  if (options.start_offset > 0) {
    if (options.start_offset < start || options.start_offset > size) {
      std::fclose(file);
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": resume offset ", options.start_offset, " is outside part ",
          options.part, " [", start, ", ", size, "]"));
    }
    start = options.start_offset;
  }
  if (start < size && fseeko(file, static_cast<off_t>(start), SEEK_SET) != 0) {
    const int err = errno;
    std::fclose(file);
    return absl::ErrnoToStatus(err, absl::StrCat("cannot seek in ", path));
  }
  // Small files get small buffers (it doubles for a longer line).
  const size_t buffer = std::min<uint64_t>(kReadBlock, size - start) + 64;
  return std::unique_ptr<CriteoReader>(new CriteoReader(
      path, file, options, size, begin, end, start, lines_before, buffer));
}

CriteoReader::CriteoReader(std::string path, FILE* file,
                           const CriteoReaderOptions& options,
                           uint64_t file_size, uint64_t begin, uint64_t end,
                           uint64_t start, uint64_t lines_before,
                           size_t buffer_bytes)
    : path_(std::move(path)),
      file_(file),
      options_(options),
      file_size_(file_size),
      begin_(begin),
      end_(end),
      pos_(start),
      line_number_(lines_before),
      buf_(buffer_bytes) {
  if (pos_ >= end_ || pos_ >= file_size_) done_ = true;
}

absl::StatusOr<std::unique_ptr<CriteoReader>> CriteoReader::OpenGzip(
    const std::string& path, const CriteoReaderOptions& options,
    uint64_t compressed_size) {
  if (options.num_parts > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": a gzip file cannot be split into ", options.num_parts,
        " byte ranges (one per trainer); use data.split: BY_FILE (whole "
        "files per trainer) or uncompressed input"));
  }
  gzFile gz = gzopen(path.c_str(), "rb");
  if (gz == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  }
  gzbuffer(gz, 1 << 20);
  // zlib defers a forward seek on reading to the first read: fill the
  // buffer, then an offset past the uncompressed end shows as a position
  // short of it.
  const z_off_t start = static_cast<z_off_t>(options.start_offset);
  if (start < 0 || gzseek(gz, start, SEEK_SET) != start) {
    gzclose(gz);
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": cannot seek to resume offset ", options.start_offset));
  }
  // Text rarely compresses past 10x; the buffer doubles if it does.
  auto reader = std::unique_ptr<CriteoReader>(new CriteoReader(
      path, nullptr, options, UINT64_MAX, 0, UINT64_MAX, options.start_offset,
      0, std::min<uint64_t>(kReadBlock, 10 * compressed_size + 4096)));
  reader->gz_ = gz;
  reader->compressed_size_ = compressed_size;
  reader->Fill();
  if (!reader->read_status_.ok()) return reader->read_status_;
  if (gztell(gz) < start) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": resume offset ", options.start_offset,
                     " is past the end of its uncompressed bytes"));
  }
  return reader;
}

CriteoReader::~CriteoReader() {
  if (file_ != nullptr) std::fclose(file_);
  if (gz_ != nullptr) gzclose(gz_);
}

bool CriteoReader::AtEnd() {
  if (gz_ == nullptr) return pos_ >= file_size_;
  return head_ == tail_ && !Fill();
}

bool CriteoReader::Fill() {
  if (eof_) return false;
  if (head_ > 0) {
    std::memmove(buf_.data(), buf_.data() + head_, tail_ - head_);
    tail_ -= head_;
    head_ = 0;
  }
  if (tail_ == buf_.size()) buf_.resize(buf_.size() * 2);
  const size_t room = buf_.size() - tail_;
  const size_t n = gz_ != nullptr
                       ? static_cast<size_t>(
                             std::max(0, gzread(gz_, buf_.data() + tail_,
                                                static_cast<unsigned>(room))))
                       : std::fread(buf_.data() + tail_, 1, room, file_);
  if (n == 0) {
    int gz_error = Z_OK;
    const char* gz_message = gz_ != nullptr ? gzerror(gz_, &gz_error) : "";
    if (gz_error != Z_OK && gz_error != Z_STREAM_END) {
      read_status_ = absl::DataLossError(
          absl::StrCat(path_, ": gzip read error at uncompressed offset ", pos_,
                       ": ", gz_message));
    } else if (file_ != nullptr && std::ferror(file_)) {
      read_status_ = absl::ErrnoToStatus(
          errno, absl::StrCat(path_, ": read error at offset ", pos_));
    }
    eof_ = true;
    return false;
  }
  tail_ += n;
  return true;
}

bool CriteoReader::ReadLine(std::string_view* line) {
  if (done_) return false;
  if (pos_ >= end_) {
    done_ = true;
    return false;
  }
  size_t scanned = 0;  // bytes after head_ already known to hold no newline
  while (true) {
    const char* base = buf_.data() + head_;
    const size_t avail = tail_ - head_;
    const char* nl = static_cast<const char*>(
        std::memchr(base + scanned, '\n', avail - scanned));
    if (nl != nullptr) {
      const size_t len = static_cast<size_t>(nl - base);
      *line = std::string_view(base, len);
      head_ += len + 1;
      pos_ += len + 1;
      return true;
    }
    scanned = avail;
    if (!Fill()) {
      // End of file: the rest, if any, is a last line without a newline.
      const size_t rest = tail_ - head_;
      if (rest == 0) {
        done_ = true;
        return false;
      }
      *line = std::string_view(buf_.data() + head_, rest);
      head_ = tail_;
      pos_ += rest;
      return true;
    }
  }
}

bool CriteoReader::NextBatch(size_t max_rows, Batch* batch) {
  batch->Clear();
  std::string_view line;
  while (batch->size() < max_rows && ReadLine(&line)) {
    ++line_number_;
    line = StripCr(line);
    // A blank last line of the file is an artifact of its writer, not a row.
    if (line.empty() && AtEnd()) continue;
    float label = 0;
    const absl::Status status =
        ParseCriteoLine(line, options_.labeled, &label, &batch->signs,
                        &batch->slots, options_.empty_field_signs);
    if (status.ok()) {
      batch->labels.push_back(label);
      batch->offsets.push_back(static_cast<uint32_t>(batch->signs.size()));
      ++good_rows_;
      continue;
    }
    ++bad_rows_;
    if (bad_rows_ <= static_cast<uint64_t>(options_.max_logged_errors)) {
      std::fprintf(stderr, "%s:%llu: %s\n", path_.c_str(),
                   static_cast<unsigned long long>(line_number_),
                   std::string(status.message()).c_str());
    } else if (bad_rows_ ==
               static_cast<uint64_t>(options_.max_logged_errors) + 1) {
      std::fprintf(stderr, "%s: more malformed lines; counting them only\n",
                   path_.c_str());
    }
  }
  return batch->size() > 0;
}

double CriteoReader::fraction_done() const {
  if (done_ || end_ <= begin_) return 1.0;
  if (gz_ != nullptr) {
    return std::clamp(static_cast<double>(gzoffset(gz_)) /
                          std::max<uint64_t>(1, compressed_size_),
                      0.0, 1.0);
  }
  const double f = static_cast<double>(pos_ - std::min(pos_, begin_)) /
                   static_cast<double>(end_ - begin_);
  return std::clamp(f, 0.0, 1.0);
}

}  // namespace sampan
