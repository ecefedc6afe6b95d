// libFuzzer target: the line parsers (trainer/data/formats.h) must accept or
// reject any bytes with a Status, in every format (TEXT too) and integer
// option, never crash, read out of bounds or leave partial output.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "trainer/data/formats.h"

namespace {

using sampan::DataFileFormat;

constexpr DataFileFormat kFormats[] = {
    DataFileFormat::kCriteo, DataFileFormat::kCriteoUnlabeled,
    DataFileFormat::kAvazu,  DataFileFormat::kLibsvm,
    DataFileFormat::kLibffm, DataFileFormat::kText};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  for (int mode = 0; mode < 4; ++mode) {
    const bool labeled = mode & 1, empty_signs = mode & 2;
    std::vector<uint64_t> signs;
    std::vector<uint16_t> slots;
    float label = -1;
    absl::Status s = sampan::ParseCriteoLine(line, labeled, &label, &signs,
                                             &slots, empty_signs);
    if (!s.ok() && (!signs.empty() || !slots.empty())) __builtin_trap();
    if (s.ok() && (signs.size() != slots.size() || signs.size() > 39)) {
      __builtin_trap();
    }
    // With empty-field signs every one of the 39 fields gives one sign.
    if (s.ok() && empty_signs && signs.size() != 39) __builtin_trap();
    if (s.ok() && labeled && label != 0 && label != 1) __builtin_trap();
  }
  // Every format, and Criteo's integers as buckets, dense inputs or both.
  for (DataFileFormat format : kFormats) {
    for (int ints = 0; ints < 3; ++ints) {
      sampan::ParseOptions o;
      o.format = format;
      o.int_buckets = ints != 1;
      o.int_log_dense = ints >= 1;
      o.empty_field_signs = ints == 2;
      std::vector<uint64_t> signs = {1};
      std::vector<uint16_t> slots = {1};
      std::vector<float> dense = {1};
      float label = -1;
      const absl::Status s =
          sampan::ParseLine(line, o, &label, &signs, &slots, &dense);
      if (!s.ok()) {
        if (signs.size() != 1 || slots.size() != 1 || dense.size() != 1) {
          __builtin_trap();
        }
        continue;
      }
      if (signs.size() != slots.size()) __builtin_trap();
      if (dense.size() != 1 + size_t(sampan::DenseDimOf(o))) __builtin_trap();
      if (label != 0 && label != 1) __builtin_trap();
      for (float x : dense) {
        if (!(x == x)) __builtin_trap();  // no NaN
      }
    }
  }
  return 0;
}
