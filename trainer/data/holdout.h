// Where a file's held-out test tail begins, for readers that stream the file
// (`sampan run`) rather than load it (`sampan train-local`, dataset.h).
//
// data.holdout_fraction h holds out the last h of a training file's lines
// as the test set: of its n lines as LoadDataset counts them (non-empty
// lines, an Avazu header excluded), lines [k, n) with k = (1 - h) * n
// rounded down, exactly as LoadOptions' end_fraction / begin_fraction
// 1 - h cut them. A streaming reader reads the head as the byte range
// [0, tail_start) and the tail as [tail_start, end) (CriteoReaderOptions'
// range_begin / range_end): the same rows as train-local's split.
//
// A validation slice v (data.validation_fraction) is the last v of the head,
// as train-local carves it: its m = v * k lines (rounded down) are
// [k - m, k), read as [validation_start, tail_start); training reads
// [0, validation_start).
//
// A pure function of the file's contents: safe from any thread.
#ifndef SAMPAN_TRAINER_DATA_HOLDOUT_H_
#define SAMPAN_TRAINER_DATA_HOLDOUT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/data/formats.h"

namespace sampan {

struct HoldoutSplit {
  // Offset (of the uncompressed bytes) of the first byte of line k, the
  // tail's first; the file's end when the tail is empty.
  uint64_t tail_start = 0;
  // The validation slice's first byte (tail_start without a slice).
  uint64_t validation_start = 0;
  // Lines to train on (k - m), to validate on (m) and held out (n - k), as
  // LoadDataset counts them.
  uint64_t head_lines = 0;
  uint64_t validation_lines = 0;
  uint64_t tail_lines = 0;
};

// Splits `path` (plain or gzip, detected by content) so that its last
// `fraction` of lines, in [0, 1), is the tail, and the last
// `validation_fraction` of the rest, in [0, 1), the validation slice. Reads
// the file once, scanning for newlines; memory: 4 bytes per line of the tail
// (and of the slice and the tail, with a slice). NotFound when the file
// cannot be opened, DataLoss when it cannot be read.
absl::StatusOr<HoldoutSplit> FindHoldoutSplit(const std::string& path,
                                              DataFileFormat format,
                                              double fraction,
                                              double validation_fraction = 0);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_HOLDOUT_H_
