#include "trainer/version_files.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "google/protobuf/text_format.h"

namespace sampan {
namespace version_files {

namespace fs = std::filesystem;

std::string VersionName(uint64_t version) {
  return absl::StrFormat("v-%06d", version);
}

// "v-<digits>" (any number of digits) -> the version.
bool ParseVersionName(absl::string_view name, uint64_t* version) {
  if (!absl::ConsumePrefix(&name, "v-") || name.empty()) return false;
  for (char c : name) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  return absl::SimpleAtoi(name, version);
}

bool Exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return ss.str();
}

// The VERSION of `dir`: NotFound when it has none, DataLoss when malformed.
absl::StatusOr<VersionManifest> ReadVersionFile(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kVersionFile);
  absl::StatusOr<std::string> text = ReadSmallFile(path);
  if (!text.ok()) return text.status();
  VersionManifest m;
  if (!google::protobuf::TextFormat::ParseFromString(*text, &m)) {
    return absl::DataLossError(
        absl::StrCat(path, ": not a VersionManifest text proto"));
  }
  if (m.format() != kFormat) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": version format ", m.format(), ", this build reads ", kFormat));
  }
  return m;
}

std::string ChainName(uint64_t version, uint64_t base) {
  return absl::StrCat("the chain of ", VersionName(version), " (base ",
                      VersionName(base), ")");
}

// Checks that `m`, read from `dir` as member `k` of the chain of `version`
// on `base`, is what that chain needs there.
absl::Status CheckChainMember(const std::string& dir, const VersionManifest& m,
                              uint64_t k, uint64_t version, uint64_t base) {
  const bool want_base = k == base;
  if (m.version() != k || m.base_version() != base ||
      m.kind() !=
          (want_base ? VersionManifest::BASE : VersionManifest::DELTA)) {
    return absl::DataLossError(absl::StrCat(
        dir, "/", kVersionFile, ": version ", m.version(), ", ",
        VersionManifest::Kind_Name(m.kind()), " on base ", m.base_version(),
        "; ", ChainName(version, base), " needs version ", k, ", ",
        want_base ? "BASE" : "DELTA", " on base ", base));
  }
  return absl::OkStatus();
}

}  // namespace version_files
}  // namespace sampan
