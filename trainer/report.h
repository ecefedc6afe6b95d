// report.html: a self-contained page (no scripts, no external files) with
// inline SVG charts of test AUC, test logloss and training examples/s over
// time, one line per trainer. Every chart carries a <title>, labelled axes
// with tick values (and a legend when it has several lines), drawn by
// trainer/chart.h, so it reads on its own.
#ifndef SAMPAN_TRAINER_REPORT_H_
#define SAMPAN_TRAINER_REPORT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "proto/job.pb.h"
#include "trainer/chart.h"
#include "trainer/local_trainer.h"

namespace sampan {

struct ReportSeries {
  std::string name;  // e.g. "trainer 0"
  std::vector<CurvePoint> points;
};

// The page's HTML.
std::string RenderReport(const std::string& title,
                         const std::vector<ReportSeries>& series);

// The file rank 0 (or train-local) writes its results to, as `name=value`
// lines: <output_dir>/result.txt.
std::string ResultPath(const JobConfig& config);

// Writes the test metrics as `name=value` lines (result.txt): test_auc,
// test_logloss, test_rows, test_copc and, when >= 0, examples_per_second.
absl::Status WriteResultFile(const std::string& path, const EvalMetrics& m,
                             double examples_per_second = -1);

// A data.stream job's page: progressive AUC and logloss and freshness per
// pass, and the passes' table (one point per line of passes.tsv).
struct PassPoint {
  int index = 0;
  std::string name;
  uint64_t rows_scored = 0;
  double auc = 0, logloss = 0, copc = 0, freshness_seconds = 0;
  std::string version;  // e.g. "v-000003 delta"
  uint64_t rows_evicted = 0;
};
std::string RenderPassReport(const std::string& title,
                             const std::vector<PassPoint>& passes);

// Writes RenderReport(...) to `path`.
absl::Status WriteReport(const std::string& path, const std::string& title,
                         const std::vector<ReportSeries>& series);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_REPORT_H_
