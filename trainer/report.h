// report.html: a self-contained page (no scripts, no external files) with
// inline SVG charts of test AUC, test logloss and training examples/s over
// time, one line per trainer. Every chart carries a <title>, labelled axes
// with tick values and a legend, so it reads on its own.
#ifndef SAMPAN_TRAINER_REPORT_H_
#define SAMPAN_TRAINER_REPORT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "trainer/local_trainer.h"

namespace sampan {

struct ReportSeries {
  std::string name;  // e.g. "trainer 0"
  std::vector<CurvePoint> points;
};

// The one way Sampan draws a chart (report.html, a stream job's pass
// report, the live job page): an SVG line chart titled `title`, a line per
// series in its own colour, named in a legend. x is seconds drawn as a
// clock ("1:30"), or with `x_label` a count with integer ticks (a pass);
// y ticks in human units ("390 k", "0.785").
struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
};
std::string RenderChart(const std::string& title, const std::string& y_label,
                        const std::vector<ChartSeries>& series,
                        const std::string& x_label = "");

// Seconds as a clock: "0:45", "12:30", "1:02:03".
std::string Clock(double seconds);

// `s` with <, >, & and " escaped for HTML text and attributes.
std::string EscapeHtml(const std::string& s);

// A page's start, up to and including its <h1>: the title and one style.
std::string HtmlPageHead(const std::string& title);

// The page's HTML.
std::string RenderReport(const std::string& title,
                         const std::vector<ReportSeries>& series);

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
