// The files of a versions root (trainer/model_version.h) that publishing
// (model_version.cc) and reading (model_version_read.cc) share: names, the
// VERSION file, and what a chain's members must say of themselves.
#ifndef SAMPAN_TRAINER_VERSION_FILES_H_
#define SAMPAN_TRAINER_VERSION_FILES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/model_version.pb.h"

namespace sampan {
namespace version_files {

inline constexpr uint32_t kFormat = 1;
inline constexpr char kVersionFile[] = "VERSION";
inline constexpr char kLatest[] = "LATEST";
inline constexpr char kStagingPrefix[] = ".staging-";

// "v-NNNNNN" (six digits or more).
std::string VersionName(uint64_t version);
// "v-<digits>" (any number of digits) -> the version.
bool ParseVersionName(absl::string_view name, uint64_t* version);
bool Exists(const std::string& path);
// NotFound when `path` does not exist; DataLoss when it cannot be read.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path);
// The VERSION of `dir`: NotFound when it has none, DataLoss when malformed,
// FailedPrecondition for a format this build does not read.
absl::StatusOr<VersionManifest> ReadVersionFile(const std::string& dir);
// "the chain of v-N (base v-B)", for messages.
std::string ChainName(uint64_t version, uint64_t base);
// DataLoss unless `m`, read from `dir` as member `k` of the chain of
// `version` on `base`, is what that chain needs there.
absl::Status CheckChainMember(const std::string& dir, const VersionManifest& m,
                              uint64_t k, uint64_t version, uint64_t base);

}  // namespace version_files
}  // namespace sampan

#endif  // SAMPAN_TRAINER_VERSION_FILES_H_
