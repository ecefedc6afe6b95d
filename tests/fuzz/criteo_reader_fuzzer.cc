// libFuzzer target: the streaming reader (CriteoReader) over any file bytes,
// in every format of trainer/data/formats.h. The input is read as a plain
// file split into 1-3 parts, gzipped and read whole, and as is (bytes that
// start with gzip's magic are then a possibly corrupt gzip stream). None
// may crash or read out of bounds; the parts together read exactly the
// whole file's rows (labels, signs, slots, dense inputs, bad rows), and the
// gzip copy reads the same rows; so do the head (in 1-2 parts) and the tail
// of a held-out split (holdout.h) of the plain and the gzip file together,
// in one format per input.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "trainer/data/criteo_reader.h"
#include "trainer/data/holdout.h"
#include "zlib.h"

namespace {

using sampan::DataFileFormat;

struct Rows {
  std::vector<uint64_t> signs;
  std::vector<uint16_t> slots;
  std::vector<uint32_t> lengths;
  std::vector<float> labels, dense;
  uint64_t bad = 0;
};

std::string TempPath(const char* what) {
  return "/tmp/sampan-criteo-reader-fuzz-" + std::to_string(getpid()) + what;
}

// Every row of `path` (of its bytes [begin, end)) in `parts` parts,
// appended in part order.
bool ReadParts(const std::string& path, const sampan::ParseOptions& parse,
               int parts, Rows* rows, uint64_t begin = 0,
               uint64_t end = UINT64_MAX) {
  for (int part = 0; part < parts; ++part) {
    sampan::CriteoReaderOptions options;
    options.parse = parse;
    options.part = part;
    options.num_parts = parts;
    options.range_begin = begin;
    options.range_end = end;
    options.max_logged_errors = 0;
    auto reader = sampan::CriteoReader::Open(path, options);
    if (!reader.ok()) return false;
    sampan::Batch batch;
    while ((*reader)->NextBatch(3, &batch)) {
      if (batch.dense.size() != batch.size() * batch.dense_dim ||
          batch.slots.size() != batch.signs.size()) {
        __builtin_trap();
      }
      rows->signs.insert(rows->signs.end(), batch.signs.begin(),
                         batch.signs.end());
      rows->slots.insert(rows->slots.end(), batch.slots.begin(),
                         batch.slots.end());
      for (size_t i = 0; i < batch.size(); ++i) {
        rows->lengths.push_back(batch.offsets[i + 1] - batch.offsets[i]);
      }
      rows->labels.insert(rows->labels.end(), batch.labels.begin(),
                          batch.labels.end());
      rows->dense.insert(rows->dense.end(), batch.dense.begin(),
                         batch.dense.end());
    }
    const double done = (*reader)->fraction_done();
    if (!(done >= 0 && done <= 1)) __builtin_trap();
    rows->bad += (*reader)->bad_rows();
  }
  return true;
}

bool Same(const Rows& a, const Rows& b) {
  return a.signs == b.signs && a.slots == b.slots && a.lengths == b.lengths &&
         a.labels == b.labels && a.dense == b.dense && a.bad == b.bad;
}

// The options each format is read with: Criteo with both integer forms
// and empty-field signs, its unlabeled form with dense inputs only.
std::vector<sampan::ParseOptions> AllFormats() {
  std::vector<sampan::ParseOptions> all;
  for (DataFileFormat f :
       {DataFileFormat::kCriteo, DataFileFormat::kCriteoUnlabeled,
        DataFileFormat::kAvazu, DataFileFormat::kLibsvm,
        DataFileFormat::kLibffm}) {
    sampan::ParseOptions o;
    o.format = f;
    o.int_log_dense = true;
    o.int_buckets = f != DataFileFormat::kCriteoUnlabeled;
    o.empty_field_signs = f == DataFileFormat::kCriteo;
    all.push_back(o);
  }
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<sampan::ParseOptions> formats = AllFormats();
  const std::string plain = TempPath(".txt"), gz = TempPath(".txt.gz");
  FILE* f = std::fopen(plain.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  const bool is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  bool zipped = false;
  if (!is_gzip) {
    gzFile out = gzopen(gz.c_str(), "wb");
    if (out != nullptr) {
      if (size > 0) gzwrite(out, data, static_cast<unsigned>(size));
      gzclose(out);
      zipped = true;
    }
  }

  for (const sampan::ParseOptions& parse : formats) {
    // Any plain file opens; a corrupt gzip stream may be refused.
    Rows whole;
    if (!ReadParts(plain, parse, 1, &whole) && !is_gzip) __builtin_trap();
    if (is_gzip) continue;
    for (int parts = 2; parts <= 3; ++parts) {
      Rows joined;
      if (!ReadParts(plain, parse, parts, &joined) || !Same(joined, whole)) {
        __builtin_trap();
      }
    }
    if (zipped) {
      Rows unzipped;
      if (!ReadParts(gz, parse, 1, &unzipped) || !Same(unzipped, whole)) {
        __builtin_trap();
      }
    }
    // The held-out split in one format per input (it differs between
    // formats only in Avazu's header), at a fraction of the input's
    // choosing: its last byte's.
    if (&parse != &formats[size % formats.size()]) continue;
    // With a validation slice (the byte before's) the three regions join
    // into the whole as well.
    const double holdout = size > 0 ? data[size - 1] / 256.0 : 0.5;
    const double validation = size > 1 ? data[size - 2] / 256.0 : 0.25;
    for (const std::string& path : {plain, gz}) {
      if (path == gz && !zipped) continue;
      auto split =
          sampan::FindHoldoutSplit(path, parse.format, holdout, validation);
      if (!split.ok() || split->validation_start > split->tail_start) {
        __builtin_trap();
      }
      for (int parts = 1; parts <= (path == gz ? 1 : 2); ++parts) {
        Rows joined;
        if (!ReadParts(path, parse, parts, &joined, 0,
                       split->validation_start) ||
            !ReadParts(path, parse, parts, &joined, split->validation_start,
                       split->tail_start) ||
            !ReadParts(path, parse, 1, &joined, split->tail_start) ||
            !Same(joined, whole)) {
          __builtin_trap();
        }
      }
    }
  }
  std::remove(plain.c_str());
  std::remove(gz.c_str());
  return 0;
}
