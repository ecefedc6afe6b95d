// Command-line flags of the form --name=value (or --name for a true bool).
//
// Each subcommand declares the flags it accepts; anything else is an error
// that names the flag, so a typo never silently falls back to a default.
#ifndef SAMPAN_COMMON_FLAGS_H_
#define SAMPAN_COMMON_FLAGS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sampan {

class Flags {
 public:
  // Parses argv[first..argc). Positional arguments are kept in order.
  static absl::StatusOr<Flags> Parse(int argc, char** argv, int first,
                                     const std::set<std::string>& known);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& def = "") const;
  // InvalidArgument naming the flag when the value is not a number.
  absl::StatusOr<int64_t> GetInt(const std::string& name, int64_t def) const;
  bool GetBool(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace sampan

#endif  // SAMPAN_COMMON_FLAGS_H_
