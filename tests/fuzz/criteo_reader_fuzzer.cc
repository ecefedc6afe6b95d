// libFuzzer target: CriteoReader over any file bytes. The input is read as
// a plain file split into 1-3 parts, gzipped and read whole, and as is
// (bytes that start with gzip's magic are then a possibly corrupt gzip
// stream). None may crash or read out of bounds; the parts together read
// exactly the whole file's rows, and the gzip copy reads the same rows.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "trainer/data/criteo_reader.h"
#include "zlib.h"

namespace {

struct Rows {
  std::vector<uint64_t> signs;
  std::vector<float> labels;
  uint64_t bad = 0;
};

std::string TempPath(const char* what) {
  return "/tmp/sampan-criteo-reader-fuzz-" + std::to_string(getpid()) + what;
}

// Every row of `path` in `parts` parts, appended in part order.
bool ReadParts(const std::string& path, int parts, Rows* rows) {
  for (int part = 0; part < parts; ++part) {
    sampan::CriteoReaderOptions options;
    options.part = part;
    options.num_parts = parts;
    options.max_logged_errors = 0;
    auto reader = sampan::CriteoReader::Open(path, options);
    if (!reader.ok()) return false;
    sampan::Batch batch;
    while ((*reader)->NextBatch(3, &batch)) {
      rows->signs.insert(rows->signs.end(), batch.signs.begin(),
                         batch.signs.end());
      rows->labels.insert(rows->labels.end(), batch.labels.begin(),
                          batch.labels.end());
    }
    const double done = (*reader)->fraction_done();
    if (!(done >= 0 && done <= 1)) __builtin_trap();
    rows->bad += (*reader)->bad_rows();
  }
  return true;
}

bool Same(const Rows& a, const Rows& b) {
  return a.signs == b.signs && a.labels == b.labels && a.bad == b.bad;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string plain = TempPath(".tsv"), gz = TempPath(".tsv.gz");
  FILE* f = std::fopen(plain.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  const bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;

  // Any plain file opens; a corrupt gzip stream may be refused.
  Rows whole;
  if (!ReadParts(plain, 1, &whole) && !is_gzip) __builtin_trap();
  if (!is_gzip) {
    for (int parts = 2; parts <= 3; ++parts) {
      Rows joined;
      if (!ReadParts(plain, parts, &joined) || !Same(joined, whole)) {
        __builtin_trap();
      }
    }
    gzFile out = gzopen(gz.c_str(), "wb");
    if (out != nullptr) {
      if (size > 0) gzwrite(out, data, static_cast<unsigned>(size));
      gzclose(out);
      Rows unzipped;
      if (!ReadParts(gz, 1, &unzipped) || !Same(unzipped, whole)) {
        __builtin_trap();
      }
    }
  }
  std::remove(plain.c_str());
  std::remove(gz.c_str());
  return 0;
}
