// Criteo-shaped synthetic data drawn from a planted model, so that the best
// AUC any learner can reach on it is known.
//
// The planted model: each of the 26 categorical slots has a vocabulary whose
// values occur with Zipf-distributed frequencies and carry their own weight;
// each of the 13 integer slots is drawn log-normally and its log-bucket
// carries a weight; a few slot pairs interact through per-value latent
// vectors (a factorization machine is the right model family, logistic
// regression gets less). label ~ Bernoulli(sigmoid(logit)). Some fields are
// left empty, as in real Criteo logs. Output is deterministic in the seed.
#ifndef SAMPAN_TRAINER_DATA_SYNTHETIC_H_
#define SAMPAN_TRAINER_DATA_SYNTHETIC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace sampan {

struct SyntheticOptions {
  uint64_t rows = 1000000;
  uint64_t seed = 1;
  // The last test_fraction of the rows go to the test file.
  double test_fraction = 0.1;
};

struct SyntheticResult {
  uint64_t train_rows = 0;
  uint64_t test_rows = 0;
  double train_ctr = 0;  // fraction of positive labels
  // AUC of the planted probabilities against the sampled test labels: the
  // reference a trained model is compared with.
  double planted_test_auc = 0;
  double planted_test_logloss = 0;
};

// Writes `train_path` and `test_path` (40-field Criteo TSV) and, when
// `planted_path` is not empty, the planted probability of every test row,
// one per line. Returns an error naming the path that could not be written.
absl::StatusOr<SyntheticResult> GenerateCriteoData(
    const SyntheticOptions& options, const std::string& train_path,
    const std::string& test_path, const std::string& planted_path);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_SYNTHETIC_H_
