#include "trainer/report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sampan {
namespace {

constexpr double kWidth = 560, kHeight = 300;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c",
                               "#9467bd", "#ff7f0e", "#8c564b"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

using Getter = std::function<double(const CurvePoint&)>;

// One line chart: x = p.seconds (labelled `x_label`), y = get(point).
std::string Chart(const std::string& title, const std::string& y_label,
                  const std::vector<ReportSeries>& series, const Getter& get,
                  const std::string& x_label = "time (s)") {
  double x_max = 1e-9, y_min = INFINITY, y_max = -INFINITY;
  for (const ReportSeries& s : series) {
    for (const CurvePoint& p : s.points) {
      x_max = std::max(x_max, p.seconds);
      y_min = std::min(y_min, get(p));
      y_max = std::max(y_max, get(p));
    }
  }
  if (!std::isfinite(y_min)) y_min = 0, y_max = 1;
  if (y_max - y_min < 1e-9) y_min -= 0.5, y_max += 0.5;
  const double pad = 0.05 * (y_max - y_min);
  y_min -= pad;
  y_max += pad;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto X = [&](double x) { return kLeft + pw * x / x_max; };
  auto Y = [&](double y) {
    return kTop + ph * (1 - (y - y_min) / (y_max - y_min));
  };
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
      "height=\"%.0f\" "
      "role=\"img\"><title>%s</title>\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
      "<text x=\"%.0f\" y=\"22\" font-size=\"15\" "
      "font-weight=\"bold\">%s</text>\n",
      kWidth, kHeight, Escape(title), kLeft, Escape(title));
  // Axes with ticks.
  absl::StrAppendFormat(
      &svg,
      "<g class=\"axis x-axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
      "y2=\"%.1f\" stroke=\"black\"/>\n",
      kLeft, kTop + ph, kLeft + pw, kTop + ph);
  for (int i = 0; i <= 5; ++i) {
    const double x = x_max * i / 5;
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"black\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">"
        "%.3g</text>\n",
        X(x), kTop + ph, X(x), kTop + ph + 5, X(x), kTop + ph + 18, x);
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
                        "text-anchor=\"middle\">%s</text></g>\n",
                        kLeft + pw / 2, kHeight - 10, Escape(x_label));
  absl::StrAppendFormat(
      &svg,
      "<g class=\"axis y-axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
      "y2=\"%.1f\" stroke=\"black\"/>\n",
      kLeft, kTop, kLeft, kTop + ph);
  for (int i = 0; i <= 5; ++i) {
    const double y = y_min + (y_max - y_min) * i / 5;
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"#ddd\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">"
        "%.4g</text>\n",
        kLeft, Y(y), kLeft + pw, Y(y), kLeft - 6, Y(y) + 4, y);
  }
  absl::StrAppendFormat(
      &svg,
      "<text transform=\"translate(16,%.1f) rotate(-90)\" font-size=\"12\" "
      "text-anchor=\"middle\">%s</text></g>\n",
      kTop + ph / 2, Escape(y_label));
  for (size_t k = 0; k < series.size(); ++k) {
    const char* color = kColors[k % 6];
    std::string points;
    for (const CurvePoint& p : series[k].points) {
      absl::StrAppendFormat(&points, "%.1f,%.1f ", X(p.seconds), Y(get(p)));
    }
    absl::StrAppendFormat(
        &svg,
        "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" "
        "stroke-width=\"2\" points=\"%s\"><title>%s</title></polyline>\n",
        color, points, Escape(series[k].name));
    for (const CurvePoint& p : series[k].points) {
      absl::StrAppendFormat(&svg,
                            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
                            "fill=\"%s\"/>\n",
                            X(p.seconds), Y(get(p)), color);
    }
    absl::StrAppendFormat(
        &svg,
        "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" width=\"12\" "
        "height=\"4\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\" "
        "font-size=\"11\">%s</text></g>\n",
        kLeft + pw - 110, kTop + 6 + 16 * k, color, kLeft + pw - 94,
        kTop + 12 + 16 * k, Escape(series[k].name));
  }
  return svg + "</svg>\n";
}

// The page up to its heading: the title, one style, no scripts.
std::string PageHead(const std::string& title) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>",
      Escape(title),
      "</title><style>body{font-family:sans-serif;margin:20px}"
      "svg{display:block;margin:12px 0;border:1px solid #ccc}</style>"
      "</head><body>\n<h1>",
      Escape(title), "</h1>\n");
}

}  // namespace

std::string RenderReport(const std::string& title,
                         const std::vector<ReportSeries>& series) {
  std::string html = PageHead(title);
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
                          Escape(s.name), p.seconds, p.examples, p.test.auc,
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
  std::string html = PageHead(title);
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
        p.index, Escape(p.name), p.rows_scored, p.auc, p.logloss, p.copc,
        Escape(p.version), p.freshness_seconds, p.rows_evicted);
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
