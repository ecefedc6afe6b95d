// The one mapping from a job's data section (proto/job.proto DataConfig) to
// how its files are parsed: format, what Criteo's integer fields become,
// empty-field signs. Every reader of a job's files takes its options from
// here: `sampan train-local` and `sampan eval` (LoadDataset), and `sampan
// run`'s training input, model export and test evaluation (CriteoReader),
// so that each sees the same examples in the same lines.
#ifndef SAMPAN_TRAINER_DATA_OPTIONS_H_
#define SAMPAN_TRAINER_DATA_OPTIONS_H_

#include "proto/job.pb.h"
#include "trainer/data/criteo_reader.h"
#include "trainer/data/dataset.h"
#include "trainer/data/formats.h"

namespace sampan {

// data.format, data.integer_features and data.empty_field_signs.
ParseOptions ParseOptionsFromJob(const JobConfig& config);

// LoadDataset's options for a whole file: the above and
// data.max_bad_fraction.
LoadOptions LoadOptionsFromJob(const JobConfig& config);

// The streaming reader's options for a whole file (part 0 of 1).
CriteoReaderOptions ReaderOptionsFromJob(const JobConfig& config);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_OPTIONS_H_
