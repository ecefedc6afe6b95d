// An in-memory dataset loaded from one file of a known format, plain or
// gzip (detected by content), for local training, evaluation and benchmarks.
//
// Lines become examples by the parsers of formats.h, the same ones the
// streaming reader (criteo_reader.h) uses; blank lines are dropped, and an
// Avazu file's header line.
//
// Thread safety: a loaded Dataset is immutable; concurrent Gather calls into
// distinct batches are safe.
#ifndef SAMPAN_TRAINER_DATA_DATASET_H_
#define SAMPAN_TRAINER_DATA_DATASET_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/data/batch.h"
#include "trainer/data/formats.h"

namespace sampan {

struct LoadOptions {
  // The format and what its fields become.
  ParseOptions parse;
  // Keep only lines [first, last) where first = part * lines / num_parts:
  // N trainers split one file by line ranges without coordination.
  int part = 0;
  int num_parts = 1;
  // Alternatively keep the line range [begin_fraction, end_fraction) of the
  // file's lines (applied within the part), e.g. [0, 0.9) to train and
  // [0.9, 1) to test on a held-out tail.
  double begin_fraction = 0.0;
  double end_fraction = 1.0;
  // Fail once more than this fraction of kept lines is malformed.
  double max_bad_fraction = 0.01;
};

struct Dataset {
  std::vector<float> labels;
  std::vector<uint32_t> offsets = {0};  // size() + 1 entries
  std::vector<uint64_t> signs;
  std::vector<uint16_t> slots;
  // Dense inputs, dense_dim per example (DenseDimOf(parse)).
  std::vector<float> dense;
  int dense_dim = 0;
  // How AddLine parses (which sets dense_dim to DenseDimOf(parse)).
  ParseOptions parse;
  uint64_t bad_rows = 0;

  size_t size() const { return labels.size(); }
  // Clears `batch` and copies examples index[0..n) into it.
  void Gather(const uint32_t* index, size_t n, Batch* batch) const;
  // Appends one line parsed with `parse`; false (and unchanged but for
  // bad_rows) on a malformed one.
  bool AddLine(std::string_view line);
};

// Replaces every sign seen fewer than `min_count` times in `train` by its
// slot's shared "rare" sign FeatureSign(slot, "__rare__"), in `train` and in
// each of `others` (e.g. the test set, judged by train's counts). Rare values
// then share one well-trained row instead of many noisy ones.
void MergeRareSigns(int min_count, Dataset* train,
                    const std::vector<Dataset*>& others);

// Reads the whole file (gunzipping when needed) and parses it.
absl::StatusOr<Dataset> LoadDataset(const std::string& path,
                                    const LoadOptions& options);

// Reads a whole file into memory, gunzipping when it is gzip.
absl::StatusOr<std::string> ReadMaybeGzipFile(const std::string& path);

// Calls fn(line) for every line of `path` (gzip or plain), without its
// newline, reading 1 MiB at a time: memory is one chunk and the longest
// line, whatever the file's size. The view is valid during the call.
absl::Status ForEachFileLine(const std::string& path,
                             const std::function<void(std::string_view)>& fn);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_DATASET_H_
