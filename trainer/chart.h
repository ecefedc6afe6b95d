// Charts and page parts shared by every HTML page Sampan writes
// (report.html, a stream job's pass report, the live job page): inline SVG,
// no scripts, no external files. Pure functions.
#ifndef SAMPAN_TRAINER_CHART_H_
#define SAMPAN_TRAINER_CHART_H_

#include <string>
#include <utility>
#include <vector>

namespace sampan {

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

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CHART_H_
