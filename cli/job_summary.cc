#include "cli/job_summary.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "trainer/model_version.h"
#include "trainer/trainer.h"

namespace sampan {
namespace {

// data.stream: the per-pass table of <output_dir>/passes.tsv (progressive
// validation, the version each pass published) and where LATEST is.
void PrintPasses(const JobConfig& config, std::ostream& out) {
  std::ifstream in(config.output_dir() + "/passes.tsv");
  std::string line;
  std::getline(in, line);  // header
  out << absl::StrFormat("%-16s %8s %8s %8s %6s  %-16s %8s\n", "pass", "scored",
                         "AUC", "logloss", "COPC", "version", "fresh s");
  int passes = 0;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    if (f.size() < 10) continue;
    out << absl::StrFormat("%-16s %8s %8.8s %8.8s %6.6s  v-%06d %-7s %8s\n",
                           f[1], f[2], f[3], f[4], f[5],
                           std::atoi(f[6].c_str()), f[7], f[8]);
    ++passes;
  }
  const std::string root = VersionsRoot(config);
  std::ifstream latest(root + "/LATEST");
  std::string name;
  std::getline(latest, name);
  out << passes << " passes; model versions in " << root << ", LATEST "
      << (name.empty() ? "none" : name) << "\n";
}

}  // namespace

void PrintJobSummary(const JobConfig& config, const JobSummary& s,
                     std::ostream& out) {
  std::ifstream in(ResultPath(config));
  std::map<std::string, std::string> result;
  for (std::string line; std::getline(in, line);) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, '=');
    result[kv.first] = kv.second;
  }
  if (!config.data().stream().root().empty()) PrintPasses(config, out);
  if (result.count("test_auc") > 0) {
    out << "test AUC " << result["test_auc"] << "  logloss "
        << result["test_logloss"] << "  COPC " << result["test_copc"] << "  on "
        << result["test_rows"] << " held-out rows\n";
  }
  if (result.count("validation_auc") > 0) {
    out << "validation AUC by epoch: "
        << absl::StrJoin(absl::StrSplit(result["validation_auc"], ','), " ")
        << (result["stopped_early"] == "1"
                ? absl::StrCat("; stopped early after epoch ",
                               result["epochs_trained"], " of ",
                               config.data().epochs())
                : "")
        << "\n";
  }
  if (result.count("vectors") > 0) {
    out << "word vectors: " << result["vectors"] << " (" << result["vocabulary"]
        << " words)";
    if (result.count("spearman") > 0) {
      out << "  Spearman " << result["spearman"] << " on "
          << result["similarity_pairs"] << " pairs ("
          << result["similarity_missing"] << " missing a word)";
    }
    out << "\n";
  }
  if (s.planted_rows > 0) {
    out << absl::StrFormat(
        "planted model (the best reachable): AUC %.6f  logloss %.6f\n",
        s.planted_auc, s.planted_logloss);
  }
  if (s.pserver_restarts > 0) {
    out << s.pserver_restarts << " pserver restart(s) during the job\n";
  }
  if (s.coordinator_restarts > 0) {
    out << s.coordinator_restarts << " coordinator restart(s) during the job\n";
  }
  if (s.coordinator_outages > 0) {
    out << absl::StrFormat(
        "the coordinator did not answer %d time(s), %.1f s in all (training "
        "went on meanwhile)\n",
        s.coordinator_outages, absl::ToDoubleSeconds(s.coordinator_waited));
  }
  if (s.serve_restarts > 0) {
    out << s.serve_restarts << " serving restart(s) during the job\n";
  }
  if (s.trainer_restarts > 0) {
    out << s.trainer_restarts << " trainer restart(s) during the job\n";
  }
  out << "logs and results: " << config.output_dir() << "\n";
}

}  // namespace sampan
