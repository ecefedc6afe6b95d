#include "cli/synthetic_data.h"

#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "trainer/data/synthetic.h"

namespace sampan {
namespace {

// The parameters line identifies a generated data set; the metrics line
// carries what the planted model scores on its test rows.
std::string ParamsLine(const SyntheticDataConfig& s) {
  return absl::StrFormat("rows=%d seed=%d test_fraction=%.6f version=%d",
                         s.rows(), s.seed(), s.test_fraction(),
                         kSyntheticVersion);
}

}  // namespace

absl::StatusOr<SyntheticData> EnsureSyntheticData(const JobConfig& config) {
  const std::string dir = config.output_dir() + "/data";
  SyntheticData data;
  data.train_path = dir + "/train.tsv";
  data.test_path = dir + "/test.tsv";
  const std::string meta_path = dir + "/synthetic.meta";
  const std::string params = ParamsLine(config.data().synthetic());

  std::ifstream meta(meta_path);
  std::string line;
  if (std::getline(meta, line) && line == params &&
      meta >> data.planted_auc >> data.planted_logloss &&
      std::filesystem::exists(data.train_path) &&
      std::filesystem::exists(data.test_path)) {
    std::cout << "using synthetic data in " << dir << "\n";
    return data;
  }

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::cout << "generating " << config.data().synthetic().rows()
            << " synthetic rows into " << dir << " ..." << std::flush;
  const absl::Time start = absl::Now();
  SyntheticOptions options;
  options.rows = config.data().synthetic().rows();
  options.seed = config.data().synthetic().seed();
  options.test_fraction = config.data().synthetic().test_fraction();
  absl::StatusOr<SyntheticResult> result = GenerateCriteoData(
      options, data.train_path, data.test_path, dir + "/test.planted");
  if (!result.ok()) return result.status();
  std::cout << absl::StrFormat(" %.1fs\n",
                               absl::ToDoubleSeconds(absl::Now() - start));
  data.planted_auc = result->planted_test_auc;
  data.planted_logloss = result->planted_test_logloss;
  std::ofstream out(meta_path);
  out << params << "\n"
      << absl::StrFormat("%.6f %.6f\n", data.planted_auc, data.planted_logloss);
  return data;
}

}  // namespace sampan
