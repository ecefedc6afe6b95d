#include "trainer/chart.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace sampan {
namespace {

constexpr double kWidth = 560, kHeight = 300;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 50;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c",
                               "#9467bd", "#ff7f0e", "#8c564b"};

}  // namespace

std::string Clock(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s >= 3600) {
    return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  }
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

std::string EscapeHtml(const std::string& s) {
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

namespace {

// A tick label read at a glance: "390 k", "1.25 M", "0.785", with as many
// decimals as ticks `step` apart need to differ, trailing zeros dropped.
std::string HumanNumber(double v, double step) {
  const double a = std::fabs(v);
  if (a < 1e-9 * step) return "0";
  double scale = 1;
  const char* unit = "";
  if (a >= 1e9) {
    scale = 1e9, unit = " G";
  } else if (a >= 1e6) {
    scale = 1e6, unit = " M";
  } else if (a >= 1e3) {
    scale = 1e3, unit = " k";
  }
  const int decimals =
      std::max(0, static_cast<int>(-std::floor(std::log10(step / scale))));
  std::string digits = absl::StrFormat("%.*f", decimals, v / scale);
  if (digits.find('.') != std::string::npos) {
    digits.erase(digits.find_last_not_of('0') + 1);
    if (digits.back() == '.') digits.pop_back();
  }
  return digits + unit;
}

// A tick step giving about five ticks over `range`: 1, 2 or 5 x 10^k, or
// for time a step a clock reads well (seconds, 15 s, 30 s, minutes, hours);
// at least `least`.
double NiceStep(double range, bool time, double least) {
  const double raw = std::max(range / 5, least);
  if (time && raw >= 1) {
    for (double step : {1., 2., 5., 10., 15., 30., 60., 120., 300., 600., 900.,
                        1800., 3600., 7200., 14400., 21600., 43200.}) {
      if (step >= raw) return step;
    }
    return 86400 * std::ceil(raw / 86400);
  }
  const double unit = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1., 2., 5.}) {
    if (m * unit >= raw) return std::max(m * unit, least);
  }
  return std::max(10 * unit, least);
}

// The multiples of `step` within [lo, hi].
std::vector<double> Ticks(double lo, double hi, double step) {
  std::vector<double> out;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + 1e-9 * step;
       t += step) {
    out.push_back(std::fabs(t) < 1e-9 * step ? 0 : t);
  }
  return out;
}

}  // namespace

std::string RenderChart(const std::string& title, const std::string& y_label,
                        const std::vector<ChartSeries>& series,
                        const std::string& x_label) {
  const bool time = x_label.empty();
  double x_max = 1e-9, y_min = INFINITY, y_max = -INFINITY;
  for (const ChartSeries& s : series) {
    for (const auto& [x, y] : s.points) {
      x_max = std::max(x_max, x);
      y_min = std::min(y_min, y);
      y_max = std::max(y_max, y);
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
      kWidth, kHeight, EscapeHtml(title), kLeft, EscapeHtml(title));
  // Axes with ticks.
  absl::StrAppendFormat(
      &svg,
      "<g class=\"axis x-axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
      "y2=\"%.1f\" stroke=\"black\"/>\n",
      kLeft, kTop + ph, kLeft + pw, kTop + ph);
  const double x_step = NiceStep(x_max, time, time ? 0 : 1);
  for (double x : Ticks(0, x_max, x_step)) {
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"black\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">"
        "%s</text>\n",
        X(x), kTop + ph, X(x), kTop + ph + 5, X(x), kTop + ph + 18,
        time ? Clock(x) : HumanNumber(x, x_step));
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
                        "text-anchor=\"middle\">%s</text></g>\n",
                        kLeft + pw / 2, kHeight - 10,
                        EscapeHtml(time ? "time (m:ss)" : x_label));
  absl::StrAppendFormat(
      &svg,
      "<g class=\"axis y-axis\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
      "y2=\"%.1f\" stroke=\"black\"/>\n",
      kLeft, kTop, kLeft, kTop + ph);
  const double y_step = NiceStep(y_max - y_min, false, 0);
  for (double y : Ticks(y_min, y_max, y_step)) {
    absl::StrAppendFormat(
        &svg,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
        "stroke=\"#ddd\"/>"
        "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">"
        "%s</text>\n",
        kLeft, Y(y), kLeft + pw, Y(y), kLeft - 6, Y(y) + 4,
        HumanNumber(y, y_step));
  }
  absl::StrAppendFormat(
      &svg,
      "<text transform=\"translate(16,%.1f) rotate(-90)\" font-size=\"12\" "
      "text-anchor=\"middle\">%s</text></g>\n",
      kTop + ph / 2, EscapeHtml(y_label));
  for (size_t k = 0; k < series.size(); ++k) {
    const char* color = kColors[k % 6];
    std::string points;
    for (const auto& [x, y] : series[k].points) {
      absl::StrAppendFormat(&points, "%.1f,%.1f ", X(x), Y(y));
    }
    absl::StrAppendFormat(
        &svg,
        "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" "
        "stroke-width=\"2\" points=\"%s\"><title>%s</title></polyline>\n",
        color, points, EscapeHtml(series[k].name));
    // Dots where they stay apart; a long live curve is a line.
    if (series[k].points.size() <= 60) {
      for (const auto& [x, y] : series[k].points) {
        absl::StrAppendFormat(&svg,
                              "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
                              "fill=\"%s\"/>\n",
                              X(x), Y(y), color);
      }
    }
    if (series.size() < 2) continue;  // the title names a lone line
    absl::StrAppendFormat(
        &svg,
        "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" width=\"12\" "
        "height=\"4\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\" "
        "font-size=\"11\">%s</text></g>\n",
        kLeft + pw - 110, kTop + 6 + 16 * k, color, kLeft + pw - 94,
        kTop + 12 + 16 * k, EscapeHtml(series[k].name));
  }
  return svg + "</svg>\n";
}

std::string HtmlPageHead(const std::string& title) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>",
      EscapeHtml(title),
      "</title><style>body{font-family:sans-serif;margin:20px}"
      "svg{display:inline-block;margin:8px 8px 8px 0;border:1px solid #ccc}"
      "table{border-collapse:collapse;margin:8px 0}"
      "td,th{border:1px solid #ccc;padding:3px 8px}"
      "td{text-align:right}th{text-align:left;background:#f4f4f4}"
      ".dead{color:#b00;font-weight:bold}</style>"
      "</head><body>\n<h1>",
      EscapeHtml(title), "</h1>\n");
}

}  // namespace sampan
