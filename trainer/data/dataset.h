// An in-memory dataset loaded from one file of a known format, plain or
// gzip (detected by content), for local training, evaluation and benchmarks.
//
// Formats and the signs they produce (common/hash.h FeatureSign):
//   kCriteo / kCriteoUnlabeled: see criteo_reader.h (slots 1..39).
//   kAvazu: CSV id,click,hour,C1,...,C21 (24 columns; 23 without click when
//     unlabeled); a first line starting with "id," is a header and skipped.
//     Slot 1 is the hour of day (last two digits of hour), slots 2..22 the
//     21 columns after hour; id is dropped.
//   kLibsvm: "label idx[:val] ..."; every index is a sign of slot 1.
//   kLibffm: "label field:idx[:val] ..."; sign FeatureSign(field + 1, idx) of
//     slot field + 1.
//   For libsvm/libffm a label > 0 is a click; values are not used (features
//   are binary, as hashed CTR features are).
//
// Thread safety: a loaded Dataset is immutable; concurrent Gather calls into
// distinct batches are safe.
#ifndef SAMPAN_TRAINER_DATA_DATASET_H_
#define SAMPAN_TRAINER_DATA_DATASET_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/data/batch.h"

namespace sampan {

enum class DataFileFormat {
  kCriteo,
  kCriteoUnlabeled,
  kAvazu,
  kLibsvm,
  kLibffm
};

// Fields (slots 1..n) a format produces; 0 when the file decides (libffm).
int FieldsOf(DataFileFormat format);

struct LoadOptions {
  DataFileFormat format = DataFileFormat::kCriteo;
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
  // Criteo only: keep the integer fields' bucket signs (slots 1..13), and
  // add them as kCriteoIntFields dense inputs sign(x) * log(1 + |x|).
  bool int_buckets = true;
  bool int_log_dense = false;
  // Criteo only: an empty field becomes its slot's "empty" sign
  // (criteo_reader.h) instead of no sign.
  bool empty_field_signs = false;
};

struct Dataset {
  std::vector<float> labels;
  std::vector<uint32_t> offsets = {0};  // size() + 1 entries
  std::vector<uint64_t> signs;
  std::vector<uint16_t> slots;
  // Dense inputs, dense_dim per example (LoadOptions::int_log_dense).
  std::vector<float> dense;
  int dense_dim = 0;
  bool int_buckets = true;
  bool empty_field_signs = false;
  uint64_t bad_rows = 0;

  size_t size() const { return labels.size(); }
  // Clears `batch` and copies examples index[0..n) into it.
  void Gather(const uint32_t* index, size_t n, Batch* batch) const;
  // Appends one parsed line; false (and unchanged) on a malformed one.
  bool AddLine(std::string_view line, DataFileFormat format);

 private:
  // Applies int_buckets and dense_dim to the Criteo row whose signs start
  // at row_start.
  bool CriteoIntegers(std::string_view line, bool labeled, size_t row_start);
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

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_DATASET_H_
