#include "trainer/data/holdout.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

// The starts of the lines that can still be the first of a region that runs
// to the end of the file, given that the file has at least as many lines as
// were counted so far: lines [First(counted), counted), where First(n) never
// decreases as n grows. The held-out tail starts at k(n) = (1 - h) * n
// rounded down; the validation slice at k(n) - floor(v * k(n)) (the last v
// of the head, as train-local carves it: local_job.cc). Kept as 32-bit gaps
// from one start to the next.
class TailCandidates {
 public:
  TailCandidates(double keep, double validation)
      : keep_(keep), validation_(validation) {}

  // Counts a line starting at `start`; false when it starts over 4 GiB
  // after the previous one (no gap fits).
  bool Add(uint64_t start) {
    if (size_ == 0) {
      front_ = start;
    } else {
      const uint64_t gap = start - back_;
      if (gap > std::numeric_limits<uint32_t>::max()) return false;
      gaps_.push_back(static_cast<uint32_t>(gap));
    }
    back_ = start;
    ++size_;
    ++counted_;
    while (counted_ - size_ < First()) {
      if (--size_ > 0) {
        front_ += gaps_.front();
        gaps_.pop_front();
      }
    }
    return true;
  }

  // k of the lines counted so far, computed as LoadDataset computes it.
  uint64_t HeadLines() const {
    return static_cast<uint64_t>(keep_ * static_cast<double>(counted_));
  }
  // The region's first line: k, less the validation slice's lines.
  uint64_t First() const {
    const uint64_t k = HeadLines();
    return k - static_cast<uint64_t>(validation_ * static_cast<double>(k));
  }
  uint64_t counted() const { return counted_; }
  // The start of line First(), or `end` when the region is empty.
  uint64_t Start(uint64_t end) const { return size_ > 0 ? front_ : end; }

 private:
  const double keep_, validation_;
  uint64_t counted_ = 0;
  uint64_t size_ = 0;  // candidates: lines [counted_ - size_, counted_)
  uint64_t front_ = 0, back_ = 0;
  std::deque<uint32_t> gaps_;
};

}  // namespace

absl::StatusOr<HoldoutSplit> FindHoldoutSplit(const std::string& path,
                                              DataFileFormat format,
                                              double fraction,
                                              double validation_fraction) {
  if (!(fraction >= 0 && fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("holdout fraction must be in [0, 1), got ", fraction));
  }
  if (!(validation_fraction >= 0 && validation_fraction < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "validation fraction must be in [0, 1), got ", validation_fraction));
  }
  // Buffers no larger than the file (a gzip file's uncompressed bytes take
  // more reads): many small files are read too (tests, the fuzzer).
  struct stat st;
  const uint64_t file_size = stat(path.c_str(), &st) == 0 ? st.st_size : 0;
  const size_t block_size =
      std::clamp<uint64_t>(file_size + 1, 8192, uint64_t{1} << 22);
  // gzread passes non-gzip files through unchanged.
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  gzbuffer(file, std::min<unsigned>(block_size, 1 << 20));
  // The same double LoadDataset's end_fraction is (local_job.cc).
  const double keep = 1 - fraction;
  TailCandidates tail(keep, 0);
  // Only when there is a slice: its candidates cost 4 bytes a line.
  TailCandidates validation(keep, validation_fraction);
  // The first non-empty line, to tell a header; cleared once told.
  std::string first;
  bool first_seen = false;
  uint64_t line_start = 0;  // of the line being scanned
  absl::Status status;
  auto end_line = [&](uint64_t end) {
    if (end == line_start) return;  // LoadDataset drops empty lines
    if (!first_seen) {
      first_seen = true;
      const bool header = IsHeaderLine(first, format);
      first = std::string();
      if (header) return;
    }
    if (!tail.Add(line_start) ||
        (validation_fraction > 0 && !validation.Add(line_start))) {
      status = absl::InvalidArgumentError(
          absl::StrCat(path, ": the line at offset ", line_start,
                       " starts over 4 GiB after the one before it"));
    }
  };
  std::vector<char> block(block_size);
  uint64_t offset = 0;  // of block[0]
  while (status.ok()) {
    const int n =
        gzread(file, block.data(), static_cast<unsigned>(block.size()));
    if (n <= 0) {
      int err = Z_OK;
      const char* message = gzerror(file, &err);
      if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
        status = absl::DataLossError(
            absl::StrCat(path, ": read error at uncompressed offset ", offset,
                         ": ", message));
      }
      break;
    }
    const char* p = block.data();
    const char* const e = p + n;
    while (p < e && status.ok()) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', e - p));
      if (!first_seen) first.append(p, nl != nullptr ? nl : e);
      if (nl == nullptr) break;
      const uint64_t nl_offset =
          offset + static_cast<uint64_t>(nl - block.data());
      end_line(nl_offset);
      line_start = nl_offset + 1;
      p = nl + 1;
    }
    offset += static_cast<uint64_t>(n);
  }
  gzclose(file);
  if (!status.ok()) return status;
  end_line(offset);  // a last line without a newline
  if (!status.ok()) return status;
  HoldoutSplit split;
  split.tail_start = tail.Start(offset);
  split.head_lines = tail.HeadLines();
  split.tail_lines = tail.counted() - split.head_lines;
  split.validation_start = split.tail_start;
  if (validation_fraction > 0) {
    split.validation_start = validation.Start(offset);
    split.validation_lines = split.head_lines - validation.First();
    split.head_lines -= split.validation_lines;
  }
  return split;
}

}  // namespace sampan
