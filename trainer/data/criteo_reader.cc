#include "trainer/data/criteo_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

constexpr size_t kReadBlock = size_t{1} << 22;  // 4 MiB

inline std::string_view StripCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

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
  const uint64_t limit = std::min(size, options.range_end);
  const uint64_t first = std::min(options.range_begin, limit);
  auto offset = [&](int part) {
    return first +
           static_cast<uint64_t>(static_cast<unsigned __int128>(limit - first) *
                                 part / options.num_parts);
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
    if (options.start_offset < start || options.start_offset > limit) {
      std::fclose(file);
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": resume offset ", options.start_offset, " is outside part ",
          options.part, " [", start, ", ", limit, "]"));
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
  const uint64_t begin = options.range_begin;
  if (options.start_offset > 0 && (options.start_offset < begin ||
                                   options.start_offset > options.range_end)) {
    gzclose(gz);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": resume offset ", options.start_offset,
                     " is outside [", begin, ", ", options.range_end, "]"));
  }
  const uint64_t offset = std::max(options.start_offset, begin);
  // zlib defers a forward seek on reading to the first read: fill the
  // buffer, then an offset past the uncompressed end shows as a position
  // short of it.
  const z_off_t start = static_cast<z_off_t>(offset);
  if (start < 0 || gzseek(gz, start, SEEK_SET) != start) {
    gzclose(gz);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot seek to offset ", offset));
  }
  // Text rarely compresses past 10x; the buffer doubles if it does.
  auto reader = std::unique_ptr<CriteoReader>(new CriteoReader(
      path, nullptr, options, UINT64_MAX, begin, options.range_end, offset, 0,
      std::min<uint64_t>(kReadBlock, 10 * compressed_size + 4096)));
  reader->gz_ = gz;
  reader->compressed_size_ = compressed_size;
  reader->Fill();
  if (!reader->read_status_.ok()) return reader->read_status_;
  if (gztell(gz) < start) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": offset ", offset,
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
  batch->dense_dim = DenseDimOf(options_.parse);
  std::string_view line;
  while (batch->size() < max_rows) {
    const uint64_t line_start = pos_;
    if (!ReadLine(&line)) break;
    ++line_number_;
    line = StripCr(line);
    // A blank last line of the file is an artifact of its writer, not a row.
    if (line.empty() && AtEnd()) continue;
    if (line_start == 0 && IsHeaderLine(line, options_.parse.format)) continue;
    float label = 0;
    const absl::Status status =
        ParseLine(line, options_.parse, &label, &batch->signs, &batch->slots,
                  &batch->dense);
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
  if (gz_ != nullptr && end_ == UINT64_MAX) {
    return std::clamp(static_cast<double>(gzoffset(gz_)) /
                          std::max<uint64_t>(1, compressed_size_),
                      0.0, 1.0);
  }
  const double f = static_cast<double>(pos_ - std::min(pos_, begin_)) /
                   static_cast<double>(end_ - begin_);
  return std::clamp(f, 0.0, 1.0);
}

}  // namespace sampan
