// CriteoReader: the streaming reader of `sampan run`'s training and test
// files, in every format of formats.h (it was named for its first). It reads
// a file batch by batch, or only one byte range of it, so that N trainers
// split one file without coordination, and resumes at a byte offset. Its
// rows are those LoadDataset (dataset.h) makes of the same lines: the same
// parser (formats.h), the same signs, slots and dense inputs.
//
// Input may be gzip (detected by its magic bytes): such a file can only be
// read whole, by one part (a trainer per file: data.split BY_FILE), and
// offsets are into its uncompressed bytes (a resume, or a range that starts
// past 0, decompresses up to its offset).
//
// A reader owns its file and is used by one thread at a time.
#ifndef SAMPAN_TRAINER_DATA_CRITEO_READER_H_
#define SAMPAN_TRAINER_DATA_CRITEO_READER_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/data/batch.h"
#include "trainer/data/formats.h"
#include "zlib.h"

namespace sampan {

struct CriteoReaderOptions {
  // The format and what its fields become.
  ParseOptions parse;
  // Read only the byte range [part / num_parts, (part + 1) / num_parts) of
  // the file, aligned to whole lines: a line belongs to the part in which it
  // starts. Lets N trainers split one file without coordination.
  int part = 0;
  int num_parts = 1;
  // Only the lines that start in the byte range [range_begin, range_end)
  // of the file (uncompressed offsets; range_begin 0 or a line start), and
  // the parts split this range instead of the whole file: the head or the
  // held-out tail of a file (holdout.h).
  uint64_t range_begin = 0;
  uint64_t range_end = UINT64_MAX;
  // Malformed lines are logged (file:line: reason) up to this many times,
  // then only counted.
  int max_logged_errors = 10;
  // Resume: start at this file offset (a line start inside the part, as
  // position() reported it) instead of the part's first line; 0 = the
  // part's start. Line numbers in messages then count from the part's start
  // as if the skipped lines were one.
  uint64_t start_offset = 0;
};

class CriteoReader {
 public:
  // Opens `path` and seeks to the start of this reader's part, counting the
  // lines before it so that error messages carry absolute line numbers. A
  // gzip file with num_parts > 1 is InvalidArgument.
  static absl::StatusOr<std::unique_ptr<CriteoReader>> Open(
      const std::string& path, const CriteoReaderOptions& options);
  ~CriteoReader();

  CriteoReader(const CriteoReader&) = delete;
  CriteoReader& operator=(const CriteoReader&) = delete;

  // Clears `batch` and fills it with up to `max_rows` good rows (with
  // DenseDimOf(options.parse) dense inputs each), skipping and counting
  // malformed ones and skipping a header line. Returns false when the part
  // is exhausted and the batch is empty.
  bool NextBatch(size_t max_rows, Batch* batch);

  // Not OK once reading failed (an I/O error, a corrupt or truncated gzip
  // stream): the part then ended early, which NextBatch cannot say.
  const absl::Status& read_status() const { return read_status_; }
  uint64_t good_rows() const { return good_rows_; }
  uint64_t bad_rows() const { return bad_rows_; }
  // File offset (uncompressed) of the next unread line: a resume point
  // between batches.
  uint64_t position() const { return pos_; }
  // Fraction of this reader's byte range consumed (of a gzip file's
  // compressed bytes unless range_end is set), in [0, 1].
  double fraction_done() const;

 private:
  CriteoReader(std::string path, FILE* file, const CriteoReaderOptions& options,
               uint64_t file_size, uint64_t begin, uint64_t end, uint64_t start,
               uint64_t lines_before, size_t buffer_bytes);
  // The whole of gzip file `path` (`compressed_size` bytes) from `start`.
  static absl::StatusOr<std::unique_ptr<CriteoReader>> OpenGzip(
      const std::string& path, const CriteoReaderOptions& options,
      uint64_t compressed_size);
  // Whether the file has no bytes past pos_ (an empty line there is a
  // writer's artifact, not a row).
  bool AtEnd();
  // Reads the next line that starts inside the range; false at its end. The
  // view (without its newline) is valid until the next call.
  bool ReadLine(std::string_view* line);
  // Refills buf_ after compacting it; false when nothing more can be read.
  bool Fill();

  std::string path_;
  FILE* file_;           // plain files
  gzFile gz_ = nullptr;  // gzip files (then file_size_ is unknown: max)
  uint64_t compressed_size_ = 0;
  CriteoReaderOptions options_;
  uint64_t file_size_;
  uint64_t begin_, end_;  // this part's nominal byte range
  uint64_t pos_;          // file offset of the next unread line
  bool done_ = false;
  uint64_t line_number_ = 0;  // 1-based number of the last line read
  uint64_t good_rows_ = 0, bad_rows_ = 0;
  // Read buffer: bytes [head_, tail_) of buf_ are file bytes from pos_ on.
  std::vector<char> buf_;
  size_t head_ = 0, tail_ = 0;
  bool eof_ = false;
  absl::Status read_status_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_CRITEO_READER_H_
