// libFuzzer target: any YAML text either parses into a valid JobConfig or is
// rejected with a message naming the source; never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<sampan::JobConfig> config =
      sampan::ParseJobConfig(yaml, "fuzz.yaml");
  if (config.ok() && !sampan::ValidateJobConfig(*config).ok()) {
    __builtin_trap();  // Parse promises a validated config
  }
  if (!config.ok() && config.status().message().substr(0, 9) != "fuzz.yaml") {
    __builtin_trap();  // every error names the file
  }
  return 0;
}
