// A distributed job's model export (model_export.h), done by every rank
// after the "trained" barrier, when no push is in flight anywhere: rank R
// writes sparse part R, the rows of the signs in its own data part (the
// same byte ranges or files it trained on, read once more); rank 0 also writes
// dense.bin and, after the "exported" barrier, the manifest.
#ifndef SAMPAN_TRAINER_PART_EXPORT_H_
#define SAMPAN_TRAINER_PART_EXPORT_H_

#include "absl/status/status.h"
#include "proto/job.pb.h"
#include "trainer/data/rare_signs.h"
#include "trainer/model_export.h"

namespace sampan {

// Writes sparse-<rank>.bin of ModelDir(config), reading rows through `read`.
// With `rare` (data.min_feature_count) the part's rare signs are read as
// their slots' rare signs, as they were trained.
absl::Status ExportTrainerPart(const JobConfig& config, int rank, int row_dim,
                               const RowReader& read,
                               const RareSigns* rare = nullptr);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_PART_EXPORT_H_
