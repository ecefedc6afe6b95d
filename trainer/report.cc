#include "trainer/report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sampan {
namespace {

using Getter = std::function<double(const CurvePoint&)>;

// A chart of CurvePoints: x = p.seconds, y = get(p).
std::string Chart(const std::string& title, const std::string& y_label,
                  const std::vector<ReportSeries>& series, const Getter& get,
                  const std::string& x_label = "") {
  std::vector<ChartSeries> lines;
  for (const ReportSeries& s : series) {
    lines.push_back({s.name, {}});
    for (const CurvePoint& p : s.points) {
      lines.back().points.emplace_back(p.seconds, get(p));
    }
  }
  return RenderChart(title, y_label, lines, x_label);
}

}  // namespace

std::string RenderReport(const std::string& title,
                         const std::vector<ReportSeries>& series) {
  std::string html = HtmlPageHead(title);
  html += Chart("Test AUC over time", "test AUC", series,
                [](const CurvePoint& p) { return p.test.auc; });
  html += Chart("Test logloss over time", "test logloss", series,
                [](const CurvePoint& p) { return p.test.logloss; });
  html += Chart("Training throughput over time", "examples/s", series,
                [](const CurvePoint& p) { return p.examples_per_second; });
  html +=
      "<table border=\"1\" cellpadding=\"4\"><tr><th>trainer</th><th>"
      "seconds</th><th>examples</th><th>test AUC</th><th>logloss</th>"
      "<th>COPC</th></tr>\n";
  for (const ReportSeries& s : series) {
    if (s.points.empty()) continue;
    const CurvePoint& p = s.points.back();
    absl::StrAppendFormat(&html,
                          "<tr><td>%s</td><td>%.1f</td><td>%d</td><td>%.4f"
                          "</td><td>%.4f</td><td>%.3f</td></tr>\n",
                          EscapeHtml(s.name), p.seconds, p.examples, p.test.auc,
                          p.test.logloss, p.test.copc);
  }
  return html + "</table>\n</body></html>\n";
}

std::string RenderPassReport(const std::string& title,
                             const std::vector<PassPoint>& passes) {
  // The chart's x is the pass's index; its y the pass's figures.
  ReportSeries progressive{"scored before training", {}};
  ReportSeries fresh{"marker to published version", {}};
  for (const PassPoint& p : passes) {
    CurvePoint c;
    c.seconds = p.index;
    c.test.auc = p.auc;
    c.test.logloss = p.logloss;
    c.test.copc = p.copc;
    c.examples_per_second = p.freshness_seconds;
    if (p.rows_scored > 0) progressive.points.push_back(c);
    fresh.points.push_back(c);
  }
  std::string html = HtmlPageHead(title);
  const std::string x = "pass";
  html += Chart(
      "Progressive AUC per pass", "AUC", {progressive},
      [](const CurvePoint& p) { return p.test.auc; }, x);
  html += Chart(
      "Progressive logloss per pass", "logloss", {progressive},
      [](const CurvePoint& p) { return p.test.logloss; }, x);
  html += Chart(
      "Freshness per pass", "seconds", {fresh},
      [](const CurvePoint& p) { return p.examples_per_second; }, x);
  html +=
      "<table border=\"1\" cellpadding=\"4\"><tr><th>pass</th><th>name</th>"
      "<th>rows scored</th><th>AUC</th><th>logloss</th><th>COPC</th>"
      "<th>version</th><th>freshness (s)</th><th>rows evicted</th></tr>\n";
  for (const PassPoint& p : passes) {
    absl::StrAppendFormat(
        &html,
        "<tr><td>%d</td><td>%s</td><td>%d</td><td>%.4f</td><td>%.4f</td>"
        "<td>%.3f</td><td>%s</td><td>%.1f</td><td>%d</td></tr>\n",
        p.index, EscapeHtml(p.name), p.rows_scored, p.auc, p.logloss, p.copc,
        EscapeHtml(p.version), p.freshness_seconds, p.rows_evicted);
  }
  return html + "</table>\n</body></html>\n";
}

absl::Status WriteReport(const std::string& path, const std::string& title,
                         const std::vector<ReportSeries>& series) {
  std::ofstream out(path);
  out << RenderReport(title, series);
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string ResultPath(const JobConfig& config) {
  return absl::StrCat(config.output_dir(), "/result.txt");
}

absl::Status WriteResultFile(const std::string& path, const EvalMetrics& m,
                             double examples_per_second) {
  std::ofstream out(path);
  out << absl::StrFormat(
      "test_auc=%.6f\ntest_logloss=%.6f\ntest_rows=%d\ntest_copc=%.4f\n", m.auc,
      m.logloss, m.rows, m.copc);
  if (examples_per_second >= 0) {
    out << absl::StrFormat("examples_per_second=%.0f\n", examples_per_second);
  }
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace sampan
