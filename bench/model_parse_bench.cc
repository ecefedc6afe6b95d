// Criteo parse throughput on one core: the file is read (and gunzipped)
// into memory first, then every line is parsed into a Dataset, 5 times;
// prints the median rows/s and, as the peer, memchr's newline scan of the
// same bytes (a floor on any line-based parser's cost).
//
//   model_parse_bench FILE
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "trainer/data/dataset.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto text = sampan::ReadMaybeGzipFile(argv[1]);
  if (!text.ok()) return 1;
  using Clock = std::chrono::steady_clock;
  std::vector<double> parse, scan;
  size_t rows = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = Clock::now();
    sampan::Dataset d;
    // Presized as LoadDataset does.
    d.labels.reserve(140000);
    d.offsets.reserve(140001);
    d.signs.reserve(140000 * 40);
    d.slots.reserve(140000 * 40);
    std::string_view rest(*text);
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      d.AddLine(rest.substr(0, nl));  // Criteo: the default
      if (nl == std::string_view::npos) break;
      rest.remove_prefix(nl + 1);
    }
    rows = d.size();
    parse.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    t0 = Clock::now();
    size_t lines = 0;
    const char* p = text->data();
    const char* end = p + text->size();
    while ((p = static_cast<const char*>(std::memchr(p, '\n', end - p)))) {
      ++p;
      ++lines;
    }
    scan.push_back(std::chrono::duration<double>(Clock::now() - t0).count() +
                   (lines == 0 ? 1e-9 : 0));
  }
  std::sort(parse.begin(), parse.end());
  std::sort(scan.begin(), scan.end());
  std::printf("rows=%zu parse_rows_per_s=%.0f scan_rows_per_s=%.0f\n", rows,
              rows / parse[2], rows / scan[2]);
  return 0;
}
