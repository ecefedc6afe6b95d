// libFuzzer target: the Criteo line parser must accept or reject any bytes
// with a Status, never crash, read out of bounds or leave partial output.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "trainer/data/criteo_reader.h"

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
  return 0;
}
