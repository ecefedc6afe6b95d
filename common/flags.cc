#include "common/flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace sampan {

absl::StatusOr<Flags> Flags::Parse(int argc, char** argv, int first,
                                   const std::set<std::string>& known) {
  Flags flags;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      flags.positional_.push_back(arg);
      continue;
    }
    const size_t eq = arg.find('=');
    std::string name =
        arg.substr(2, eq == std::string::npos ? arg.npos : eq - 2);
    std::string value = eq == std::string::npos ? "true" : arg.substr(eq + 1);
    if (known.count(name) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, " (expected one of: --",
                       absl::StrJoin(known, ", --"), ")"));
    }
    flags.values_[name] = value;
  }
  return flags;
}

std::string Flags::Get(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

absl::StatusOr<int64_t> Flags::GetInt(const std::string& name,
                                      int64_t def) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  int64_t v;
  if (!absl::SimpleAtoi(it->second, &v)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flag --", name, ": expected an integer, got \"", it->second, "\""));
  }
  return v;
}

bool Flags::GetBool(const std::string& name) const {
  const std::string v = Get(name, "false");
  return v == "true" || v == "1" || v == "yes";
}

}  // namespace sampan
