#include "trainer/model_version.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/file_digest.h"
#include "common/log.h"
#include "google/protobuf/text_format.h"
#include "trainer/version_files.h"

namespace sampan {

using version_files::CheckChainMember;
using version_files::Exists;
using version_files::kFormat;
using version_files::kLatest;
using version_files::kStagingPrefix;
using version_files::kVersionFile;
using version_files::ParseVersionName;
using version_files::ReadSmallFile;
using version_files::ReadVersionFile;
using version_files::VersionName;

namespace {

namespace fs = std::filesystem;

// Removes a version directory, VERSION first, so that a deletion cut short
// leaves an unpublished directory rather than a corrupt version.
void RemoveVersionDir(const std::string& dir) {
  std::error_code ec;
  fs::remove(absl::StrCat(dir, "/", kVersionFile), ec);
  fs::remove_all(dir, ec);
  if (ec) {
    SAMPAN_LOG(WARNING) << "cannot remove " << dir << ": " << ec.message();
  }
}

// Every directory of `root` named v-N (published or not), by version, as
// (version, path).
std::vector<std::pair<uint64_t, std::string>> VersionDirs(
    const std::string& root) {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    uint64_t version = 0;
    if (e.is_directory() &&
        ParseVersionName(e.path().filename().string(), &version)) {
      out.emplace_back(version,
                       absl::StrCat(root, "/", e.path().filename().string()));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// FailedPrecondition unless `base` and every version after it up to
// `version` - 1 are published, as the chain of a delta `version` needs.
absl::Status CheckDeltaChain(const std::string& root, uint64_t version,
                             uint64_t base) {
  if (base >= version) {
    return absl::FailedPreconditionError(
        absl::StrCat("delta ", VersionName(version), " names base ",
                     VersionName(base), ", which is not older"));
  }
  for (uint64_t k = base; k < version; ++k) {
    const std::string dir = VersionDir(root, k);
    absl::StatusOr<VersionManifest> m = ReadVersionFile(dir);
    absl::Status s =
        m.ok() ? CheckChainMember(dir, *m, k, version, base) : m.status();
    if (!s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot publish delta ", VersionName(version), ": ",
                       k == base ? "its base" : "a version before it",
                       " is not published: ", s.message()));
    }
  }
  return absl::OkStatus();
}

// FailedPrecondition naming what a publisher forgot to write.
absl::Status CheckStaging(const std::string& staging,
                          const ModelManifest& manifest, uint64_t* rows) {
  if (!Exists(DenseModelPath(staging))) {
    return absl::FailedPreconditionError(
        absl::StrCat(DenseModelPath(staging),
                     " is missing: rank 0 writes it before publishing"));
  }
  absl::StatusOr<uint64_t> n = CountSparseRows(staging, manifest);
  if (absl::IsNotFound(n.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("a sparse part is missing: ", n.status().message()));
  }
  if (!n.ok()) return n.status();
  *rows = *n;
  return absl::OkStatus();
}

// Withdraws the versions numbered above `version`: LATEST goes back to the
// newest version at or below it (or away), then they are deleted.
absl::Status WithdrawNewer(const std::string& root, uint64_t version) {
  const auto dirs = VersionDirs(root);
  if (dirs.empty() || dirs.back().first <= version) return absl::OkStatus();
  const std::string latest = absl::StrCat(root, "/", kLatest);
  absl::StatusOr<std::vector<VersionManifest>> published = ListVersions(root);
  if (!published.ok()) return published.status();
  const VersionManifest* below = nullptr;
  for (const VersionManifest& m : *published) {
    if (m.version() <= version) below = &m;
  }
  absl::Status s;
  if (below != nullptr) {
    s = WriteFileDurably(latest,
                         absl::StrCat(VersionName(below->version()), "\n"));
  } else if (Exists(latest)) {
    s = std::remove(latest.c_str()) == 0
            ? FsyncPath(root)
            : absl::UnavailableError(absl::StrCat("cannot remove ", latest));
  }
  if (!s.ok()) return s;
  for (auto it = dirs.rbegin(); it != dirs.rend() && it->first > version;
       ++it) {
    SAMPAN_LOG(WARNING) << "withdrawing " << it->second << ": version "
                        << version << " is published again";
    RemoveVersionDir(it->second);
  }
  return absl::OkStatus();
}

// Renames `staging` to `final_dir`; when `final_dir` exists, swaps the two
// in one step (Linux renameat2), then deletes the old one.
absl::Status Install(const std::string& staging, const std::string& final_dir) {
  if (!Exists(final_dir)) {
    if (std::rename(staging.c_str(), final_dir.c_str()) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot rename ", staging,
                                                 " to ", final_dir, ": ",
                                                 std::strerror(errno)));
    }
    return absl::OkStatus();
  }
  if (renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, final_dir.c_str(),
                RENAME_EXCHANGE) != 0) {
    // A file system without the exchange: rename the old one aside first,
    // so that it stays whole until the new one takes its name.
    if (errno != EINVAL && errno != ENOSYS) {
      return absl::UnavailableError(absl::StrCat("cannot swap ", staging,
                                                 " and ", final_dir, ": ",
                                                 std::strerror(errno)));
    }
    const std::string aside = absl::StrCat(staging, ".replaced");
    RemoveVersionDir(aside);
    if (std::rename(final_dir.c_str(), aside.c_str()) != 0 ||
        std::rename(staging.c_str(), final_dir.c_str()) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot replace ", final_dir,
                                                 " by ", staging, ": ",
                                                 std::strerror(errno)));
    }
    RemoveVersionDir(aside);
    return absl::OkStatus();
  }
  SAMPAN_LOG(INFO) << "replaced " << final_dir << " (published again)";
  RemoveVersionDir(staging);  // now the old version
  return absl::OkStatus();
}

// Keeps the newest `keep_bases` bases and every version after the oldest of
// them; deletes older versions, unpublished ones among them, and staging
// directories of versions before it.
absl::Status ApplyRetention(const std::string& root, uint32_t keep_bases) {
  if (keep_bases == 0) return absl::OkStatus();
  absl::StatusOr<std::vector<VersionManifest>> versions = ListVersions(root);
  if (!versions.ok()) return versions.status();
  absl::StatusOr<uint64_t> latest = LatestVersion(root);
  if (!latest.ok()) return latest.status();
  std::vector<uint64_t> bases;
  for (const VersionManifest& m : *versions) {
    if (m.kind() == VersionManifest::BASE) bases.push_back(m.version());
  }
  if (bases.empty()) return absl::OkStatus();
  const uint64_t oldest_kept =
      bases[bases.size() > keep_bases ? bases.size() - keep_bases : 0];
  for (const auto& [version, dir] : VersionDirs(root)) {
    if (version >= oldest_kept || version == *latest) continue;
    SAMPAN_LOG(INFO) << "retention: removing " << dir << " (keeping "
                     << keep_bases << " bases from " << VersionName(oldest_kept)
                     << ")";
    RemoveVersionDir(dir);
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string filename = e.path().filename().string();
    absl::string_view name = filename;
    uint64_t version = 0;
    if (absl::ConsumePrefix(&name, kStagingPrefix) &&
        ParseVersionName(name, &version) && version < oldest_kept) {
      RemoveVersionDir(e.path().string());
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string VersionsRoot(const JobConfig& config) {
  const std::string& dir = config.data().stream().versions_dir();
  return dir.empty() ? absl::StrCat(config.output_dir(), "/versions") : dir;
}

std::string VersionDir(const std::string& root, uint64_t version) {
  return absl::StrCat(root, "/", VersionName(version));
}

std::string StagingDir(const std::string& root, uint64_t version) {
  return absl::StrCat(root, "/", kStagingPrefix, VersionName(version));
}

absl::Status ClearStaging(const std::string& root, uint64_t version) {
  std::error_code ec;
  fs::remove_all(StagingDir(root, version), ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat(
        "cannot remove ", StagingDir(root, version), ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::Status PublishVersion(const std::string& root, const JobConfig& config,
                            const ModelManifest& manifest,
                            const VersionInfo& info, uint32_t keep_bases) {
  const uint64_t base = info.base ? info.version : info.base_version;
  if (!info.base) {
    absl::Status s = CheckDeltaChain(root, info.version, base);
    if (!s.ok()) return s;
  }
  const std::string staging = StagingDir(root, info.version);
  VersionManifest m;
  uint64_t rows = 0;
  absl::Status s = CheckStaging(staging, manifest, &rows);
  if (!s.ok()) return s;
  s = FinishModelDir(staging, config, manifest);
  if (!s.ok()) return s;
  absl::StatusOr<std::vector<FileDigest>> files =
      DigestFiles(staging, {kVersionFile, absl::StrCat(kVersionFile, ".tmp")});
  if (!files.ok()) return files.status();
  m.set_format(kFormat);
  m.set_version(info.version);
  m.set_kind(info.base ? VersionManifest::BASE : VersionManifest::DELTA);
  m.set_base_version(base);
  m.set_pass(info.pass);
  m.set_pass_index(info.pass_index);
  m.set_created_unix_seconds(
      absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  m.set_marker_unix_seconds(info.marker_unix_seconds);
  m.set_rows(rows);
  for (const FileDigest& f : *files) {
    VersionFile* file = m.add_files();
    file->set_path(f.path);
    file->set_size(f.size);
    file->set_crc32(f.crc32);
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(m, &text);
  // Durable with the directory's entries: WriteFileDurably fsyncs staging.
  s = WriteFileDurably(absl::StrCat(staging, "/", kVersionFile), text);
  if (!s.ok()) return s;
  s = WithdrawNewer(root, info.version);
  if (!s.ok()) return s;
  const std::string dir = VersionDir(root, info.version);
  s = Install(staging, dir);
  if (!s.ok()) return s;
  s = FsyncPath(root);
  if (!s.ok()) return s;
  s = WriteFileDurably(absl::StrCat(root, "/", kLatest),
                       absl::StrCat(VersionName(info.version), "\n"));
  if (!s.ok()) return s;
  SAMPAN_LOG(INFO) << "published " << dir << " ("
                   << (info.base ? "base" : "delta") << ", pass " << info.pass
                   << ", " << rows << " rows)";
  s = ApplyRetention(root, keep_bases);
  if (!s.ok()) {
    SAMPAN_LOG(WARNING) << "retention under " << root
                        << " failed: " << s.message();
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> LatestVersion(const std::string& root) {
  const std::string path = absl::StrCat(root, "/", kLatest);
  absl::StatusOr<std::string> text = ReadSmallFile(path);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(
        absl::StrCat(path, " does not exist: no version is published"));
  }
  if (!text.ok()) return text.status();
  uint64_t version = 0;
  if (!ParseVersionName(absl::StripAsciiWhitespace(*text), &version)) {
    return absl::DataLossError(
        absl::StrCat(path, ": expected a version directory name (v-NNNNNN)"));
  }
  return version;
}

absl::StatusOr<std::vector<VersionManifest>> ListVersions(
    const std::string& root) {
  std::vector<VersionManifest> out;
  for (const auto& [version, dir] : VersionDirs(root)) {
    if (dir != VersionDir(root, version)) continue;  // not our name for it
    absl::StatusOr<VersionManifest> m = ReadVersionFile(dir);
    if (absl::IsNotFound(m.status())) continue;
    if (!m.ok()) return m.status();
    out.push_back(*std::move(m));
  }
  return out;
}

}  // namespace sampan
