// Job configs: YAML files mapped field by field onto sampan.JobConfig
// (proto/job.proto).
//
// Every key in the YAML must name a field of the message at that point;
// unknown keys, wrong types and out-of-range values are errors whose message
// names the file, the line and the field path, e.g.
//   configs/x.yaml:7: model.hidden[1]: expected integer, got "x"
// Fields the YAML leaves out keep the defaults of DefaultJobConfig().
#ifndef SAMPAN_COMMON_CONFIG_H_
#define SAMPAN_COMMON_CONFIG_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"

namespace sampan {

// The defaults every job starts from (documented per field in job.proto).
JobConfig DefaultJobConfig();

// data.validation_fraction of a job file with data.epochs > 1 that does not
// set it (CTR batch jobs): early stopping is on unless turned off with 0.
inline constexpr double kDefaultValidationFraction = 0.1;

// Parses YAML text; `source_name` prefixes error messages (usually the path).
// Returns InvalidArgument on any syntax, type or semantic error.
absl::StatusOr<JobConfig> ParseJobConfig(std::string_view yaml,
                                         std::string_view source_name);

// Reads and parses a YAML file. NotFound if it cannot be read.
absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path);

// Semantic checks across fields (sizes > 0, probabilities in range, files
// given when no synthetic data is asked for). Messages name the field path.
absl::Status ValidateJobConfig(const JobConfig& config);

// What `sampan run` (and render, submit, validate) cannot do yet of what
// ValidateJobConfig accepts for `sampan train-local`: an error naming the
// field, so that the job is refused before anything starts.
absl::Status ValidateForRun(const JobConfig& config);

// Whether the job takes checkpoints (checkpoint.every_steps, every_seconds
// or, for a data.stream, every_passes).
bool TakesCheckpoints(const JobConfig& config);

// DNN, WIDE_DEEP, DEEPFM and DCN_V2: models with dense weights trained by
// the trainers (model.mode). LR, FM and WORD2VEC have rows only.
inline bool IsDeepModel(ModelType type) {
  return type == DNN || type == WIDE_DEEP || type == DEEPFM || type == DCN_V2;
}

// What `sampan train-local` refuses of what ValidateJobConfig accepts (a
// data.stream), naming the field.
absl::Status ValidateForTrainLocal(const JobConfig& config);

}  // namespace sampan

#endif  // SAMPAN_COMMON_CONFIG_H_
