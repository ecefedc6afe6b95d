// PassPattern: where a continuous-training job's passes lie under their
// root (data.stream.pattern), e.g. "%Y%m%d/%H" for ROOT/20261201/05.
//
// A pattern is literal text and the fields %Y (four digits), %m, %d, %H,
// %M (two digits each); "/" separates directory levels; %% is a literal
// "%". %Y, %m and %d are required (a pass belongs to a day). A path
// matches when it spells the pattern with a valid date and time; the pass
// then has that time (fields left out are 0) and that day. Passes order by
// their time.
#ifndef SAMPAN_COMMON_PASS_PATTERN_H_
#define SAMPAN_COMMON_PASS_PATTERN_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/civil_time.h"

namespace sampan {

struct PassTime {
  absl::CivilMinute time;
  std::string day;  // "YYYYMMDD"
};

class PassPattern {
 public:
  // InvalidArgument saying what is wrong with `pattern`.
  static absl::StatusOr<PassPattern> Compile(absl::string_view pattern);

  // The time `relative` (a path under the root, "/"-separated, no leading
  // "/") spells, or nullopt when it does not match the pattern.
  std::optional<PassTime> Match(absl::string_view relative) const;

  // Directory levels of a pass under the root (1 for "%Y%m%d%H").
  int depth() const { return depth_; }

 private:
  struct Token {
    char field = 0;       // 'Y', 'm', 'd', 'H', 'M'; 0 for literal text
    std::string literal;  // when field == 0
  };
  std::vector<Token> tokens_;
  int depth_ = 1;
};

}  // namespace sampan

#endif  // SAMPAN_COMMON_PASS_PATTERN_H_
