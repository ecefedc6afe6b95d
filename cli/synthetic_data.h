// Synthetic data for a job whose config asks for it (data.synthetic.rows >
// 0), generated once into <output_dir>/data and reused while the generator
// parameters stay the same.
#ifndef SAMPAN_CLI_SYNTHETIC_DATA_H_
#define SAMPAN_CLI_SYNTHETIC_DATA_H_

#include <string>

#include "absl/status/statusor.h"
#include "proto/job.pb.h"

namespace sampan {

struct SyntheticData {
  std::string train_path, test_path;
  double planted_auc = 0, planted_logloss = 0;
};

absl::StatusOr<SyntheticData> EnsureSyntheticData(const JobConfig& config);

}  // namespace sampan

#endif  // SAMPAN_CLI_SYNTHETIC_DATA_H_
