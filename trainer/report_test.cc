#include "trainer/report.h"

#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace sampan {
namespace {

std::vector<ReportSeries> TwoTrainers() {
  std::vector<ReportSeries> series(2);
  for (int t = 0; t < 2; ++t) {
    series[t].name = "trainer " + std::to_string(t);
    for (int i = 1; i <= 5; ++i) {
      CurvePoint p;
      p.seconds = i;
      p.examples = 1000 * i;
      p.examples_per_second = 1000 + 100 * t;
      p.test.auc = 0.6 + 0.03 * i + 0.01 * t;
      p.test.logloss = 0.6 - 0.02 * i;
      p.test.rows = 100;
      series[t].points.push_back(p);
    }
  }
  return series;
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos;
       at = s.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(ReportTest, ChartsCarryTitlesAxesAndSeries) {
  const std::string html = RenderReport("job <x>", TwoTrainers());
  EXPECT_EQ(Count(html, "<svg"), 3u);
  EXPECT_NE(html.find("<title>Test AUC over time</title>"), std::string::npos);
  EXPECT_NE(html.find("<title>Test logloss over time</title>"),
            std::string::npos);
  EXPECT_NE(html.find("<title>Training throughput over time</title>"),
            std::string::npos);
  EXPECT_EQ(Count(html, "class=\"axis x-axis\""), 3u);
  EXPECT_EQ(Count(html, "class=\"axis y-axis\""), 3u);
  EXPECT_EQ(Count(html, "time (m:ss)"), 3u);
  EXPECT_EQ(Count(html, "class=\"series\""), 6u);
  EXPECT_NE(html.find("job &lt;x&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // self-contained
}

// Decodes an 8-bit RGB/RGBA PNG into RGB triples; false if unsupported.
bool DecodePng(const std::string& png, int* w, int* h,
               std::vector<uint8_t>* rgb) {
  if (png.size() < 8 || png.compare(1, 3, "PNG") != 0) return false;
  auto be32 = [&](size_t at) {
    return uint32_t(uint8_t(png[at])) << 24 |
           uint32_t(uint8_t(png[at + 1])) << 16 |
           uint32_t(uint8_t(png[at + 2])) << 8 | uint32_t(uint8_t(png[at + 3]));
  };
  std::string idat;
  int channels = 0;
  for (size_t at = 8; at + 8 <= png.size();) {
    const uint32_t len = be32(at);
    const std::string type = png.substr(at + 4, 4);
    if (type == "IHDR") {
      *w = be32(at + 8);
      *h = be32(at + 12);
      if (png[at + 16] != 8) return false;
      channels = png[at + 17] == 2 ? 3 : png[at + 17] == 6 ? 4 : 0;
    } else if (type == "IDAT") {
      idat += png.substr(at + 8, len);
    }
    at += 12 + len;
  }
  if (channels == 0) return false;
  const size_t stride = size_t(*w) * channels;
  std::vector<uint8_t> raw((stride + 1) * *h);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len,
                 reinterpret_cast<const Bytef*>(idat.data()),
                 idat.size()) != Z_OK) {
    return false;
  }
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  for (int y = 0; y < *h; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= size_t(channels) ? cur[x - channels] : 0;
      const int b = prev[x];
      const int c = x >= size_t(channels) ? prev[x - channels] : 0;
      int pred = 0;
      if (filter == 1) pred = a;
      if (filter == 2) pred = b;
      if (filter == 3) pred = (a + b) / 2;
      if (filter == 4) {
        const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b),
                  pc = std::abs(p - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      cur[x] = uint8_t(in[x] + pred);
    }
    for (int x = 0; x < *w; ++x) {
      for (int k = 0; k < 3; ++k) rgb->push_back(cur[x * channels + k]);
    }
    prev.swap(cur);
  }
  return true;
}

const char* Chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (std::ifstream(p).good()) return p;
  }
  return nullptr;
}

// A stream's page: one point per pass scored, the passes' table, the x axis
// labelled by pass.
// Ticks people read at a glance: a clock on the time axis, "k" and "M"
// for big numbers, no exponents, and every label distinct.
TEST(ReportTest, TicksAreInHumanUnits) {
  ReportSeries s{"trainer 0", {}};
  for (int i = 0; i <= 10; ++i) {
    CurvePoint p;
    p.seconds = 15 * i;
    p.examples_per_second = 390000 + 81000 * i;  // 390 k .. 1.2 M
    p.test.auc = 0.78 + 0.001 * i;
    p.test.logloss = 0.45;
    s.points.push_back(p);
  }
  const std::string html = RenderReport("ticks", {s});
  for (const char* label : {">0:00<", ">0:30<", ">1:00<", ">2:30<", ">400 k<",
                            ">800 k<", ">1.2 M<", ">0.785<"}) {
    EXPECT_NE(html.find(label), std::string::npos) << label;
  }
  EXPECT_EQ(html.find("e+"), std::string::npos);
  // Within one chart no two tick labels are the same.
  size_t at = html.find("Training throughput");
  std::set<std::string> labels;
  size_t n = 0;
  for (size_t t = html.find("text-anchor=\"end\">", at); t != std::string::npos;
       t = html.find("text-anchor=\"end\">", t + 1)) {
    const size_t b = t + 18, e = html.find('<', b);
    labels.insert(html.substr(b, e - b));
    ++n;
  }
  EXPECT_GE(n, 3u);
  EXPECT_EQ(labels.size(), n);
}

TEST(ReportTest, PassReportHasAPointPerScoredPass) {
  std::vector<PassPoint> passes;
  for (int i = 0; i < 4; ++i) {
    PassPoint p;
    p.index = i;
    p.name = "20261201/0" + std::to_string(i);
    p.rows_scored = i == 2 ? 0 : 1000;  // pass 2 was not scored
    p.auc = 0.6 + 0.05 * i;
    p.logloss = 0.5;
    p.freshness_seconds = 10 + i;
    p.version = "v-00000" + std::to_string(i + 1);
    passes.push_back(p);
  }
  const std::string html = RenderPassReport("stream <x>", passes);
  EXPECT_NE(html.find("<title>stream &lt;x&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("Progressive AUC per pass"), std::string::npos);
  EXPECT_NE(html.find("Freshness per pass"), std::string::npos);
  EXPECT_NE(html.find(">pass</text>"), std::string::npos);
  EXPECT_EQ(html.find("time (m:ss)"), std::string::npos);
  // AUC and logloss charts: 3 scored passes each; freshness: all 4.
  EXPECT_EQ(Count(html, "<circle"), 3u + 3u + 4u);
  EXPECT_NE(html.find("<td>20261201/03</td>"), std::string::npos);
}

TEST(ReportTest, HeadlessChromiumRendersCharts) {
  const char* chromium = Chromium();
  if (chromium == nullptr) {
    GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh adds it)";
  }
  const std::string dir =
      std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
  const std::string html = dir + "/report.html", png = dir + "/shot.png";
  ASSERT_TRUE(WriteReport(html, "chromium check", TwoTrainers()).ok());
  const std::string cmd =
      std::string(chromium) +
      " --headless --no-sandbox --disable-gpu --no-first-run"
      " --disable-background-networking"
      " --disable-component-update --disable-sync"
      " --user-data-dir=" +
      dir +
      "/profile"
      " --window-size=800,1100 --screenshot=" +
      png + " file://" + html + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(png, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  int w = 0, h = 0;
  std::vector<uint8_t> rgb;
  ASSERT_TRUE(DecodePng(bytes.str(), &w, &h, &rgb)) << "bad PNG " << png;
  size_t dark = 0;
  std::set<uint32_t> colors;
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) {
    if (rgb[i] + rgb[i + 1] + rgb[i + 2] < 600) ++dark;
    colors.insert(rgb[i] << 16 | rgb[i + 1] << 8 | rgb[i + 2]);
  }
  // Not blank: axes, text and two coloured series cover a visible share.
  EXPECT_GT(dark, size_t(w) * h / 200) << w << "x" << h;
  EXPECT_GT(colors.size(), 10u);
}

}  // namespace
}  // namespace sampan
