#include "trainer/model_version.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/file_digest.h"
#include "common/log.h"
#include "google/protobuf/text_format.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kFormat = 1;
constexpr char kVersionFile[] = "VERSION";
constexpr char kLatest[] = "LATEST";
constexpr char kStagingPrefix[] = ".staging-";

// Which keys a read keeps; null keeps all.
using KeyFilter = std::function<bool(uint64_t)>;

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

// The VERSIONs of the chain base..version (`newest` read from `newest_dir`
// already), each checked to belong to it.
absl::StatusOr<std::vector<std::pair<std::string, VersionManifest>>>
ReadChainManifests(const std::string& root, const std::string& newest_dir,
                   const VersionManifest& newest) {
  const uint64_t version = newest.version();
  const uint64_t base = newest.base_version();
  if (base > version) {
    return absl::DataLossError(absl::StrCat(newest_dir, "/", kVersionFile,
                                            ": base_version ", base,
                                            " is above version ", version));
  }
  std::vector<std::pair<std::string, VersionManifest>> chain;
  for (uint64_t k = base; k <= version; ++k) {
    const std::string dir = k == version ? newest_dir : VersionDir(root, k);
    absl::StatusOr<VersionManifest> m =
        k == version ? newest : ReadVersionFile(dir);
    if (absl::IsNotFound(m.status())) {
      return absl::NotFoundError(absl::StrCat("version ", k, " (", dir, ") of ",
                                              ChainName(version, base),
                                              " is missing"));
    }
    if (!m.ok()) return m.status();
    absl::Status s = CheckChainMember(dir, *m, k, version, base);
    if (!s.ok()) return s;
    chain.emplace_back(dir, *std::move(m));
  }
  return chain;
}

bool AllZeros(const float* row, int dim) {
  return std::all_of(row, row + dim, [](float x) { return x == 0.0f; });
}

// Applies the versions of a chain in order: a version's rows overwrite or
// add keys, its rows of zeros delete them.
class RowMerger {
 public:
  explicit RowMerger(KeyFilter keep) : keep_(std::move(keep)) {}

  int row_dim() const { return merged_.row_dim; }

  void Apply(SparseRows rows) {
    const int d = rows.row_dim;
    if (applied_++ == 0 && !keep_) {
      // The base: take its rows as they are, then drop its rows of zeros.
      merged_ = std::move(rows);
      for (auto it = merged_.index.begin(); it != merged_.index.end();) {
        const float* row = merged_.rows.data() + size_t(it->second) * d;
        if (AllZeros(row, d)) {
          merged_.index.erase(it++);
          ++orphans_;
        } else {
          ++it;
        }
      }
      return;
    }
    merged_.row_dim = d;
    for (const auto& [key, i] : rows.index) {
      if (keep_ && !keep_(key)) continue;
      const float* row = rows.rows.data() + size_t(i) * d;
      auto it = merged_.index.find(key);
      if (AllZeros(row, d)) {
        if (it != merged_.index.end()) {
          merged_.index.erase(it);
          ++orphans_;
        }
      } else if (it != merged_.index.end()) {
        std::copy_n(row, d, merged_.rows.begin() + size_t(it->second) * d);
      } else {
        merged_.index.emplace(key, uint32_t(merged_.rows.size() / d));
        merged_.rows.insert(merged_.rows.end(), row, row + d);
      }
    }
  }

  // The merged rows, without the slots of deleted keys.
  SparseRows Finish() && {
    if (orphans_ == 0) return std::move(merged_);
    const int d = merged_.row_dim;
    SparseRows out;
    out.row_dim = d;
    out.index.reserve(merged_.index.size());
    out.rows.reserve(merged_.index.size() * d);
    for (const auto& [key, i] : merged_.index) {
      out.index.emplace(key, uint32_t(out.index.size()));
      const auto row = merged_.rows.begin() + size_t(i) * d;
      out.rows.insert(out.rows.end(), row, row + d);
    }
    return out;
  }

 private:
  KeyFilter keep_;
  SparseRows merged_;
  int applied_ = 0;     // versions applied
  size_t orphans_ = 0;  // slots of merged_.rows no key points to
};

// The chain whose newest version lives in `newest_dir`, its VERSIONs
// checked.
absl::StatusOr<std::vector<ChainMember>> ChainOf(const std::string& root,
                                                 const std::string& newest_dir,
                                                 uint64_t version) {
  absl::StatusOr<VersionManifest> newest = ReadVersionFile(newest_dir);
  if (absl::IsNotFound(newest.status())) {
    return absl::NotFoundError(
        absl::StrCat("version ", version, " (", newest_dir,
                     ") is not published: it has no ", kVersionFile));
  }
  if (!newest.ok()) return newest.status();
  if (newest->version() != version) {
    return absl::DataLossError(absl::StrCat(newest_dir, "/", kVersionFile,
                                            ": version ", newest->version(),
                                            ", expected ", version));
  }
  auto chain = ReadChainManifests(root, newest_dir, *newest);
  if (!chain.ok()) return chain.status();
  std::vector<ChainMember> out;
  for (auto& [dir, m] : *chain) out.push_back({dir, std::move(m)});
  return out;
}

// Reads the chain whose newest version lives in `newest_dir`: every file
// verified first, then the rows merged.
absl::StatusOr<LoadedModel> ReadChain(const std::string& root,
                                      const std::string& newest_dir,
                                      uint64_t version, KeyFilter keep) {
  absl::StatusOr<std::vector<ChainMember>> chain =
      ChainOf(root, newest_dir, version);
  if (!chain.ok()) return chain.status();
  for (const ChainMember& member : *chain) {
    absl::Status s = VerifyChainMember(member);
    if (!s.ok()) return s;
  }
  LoadedModel out;
  RowMerger merger(std::move(keep));
  for (const auto& [dir, m] : *chain) {
    absl::StatusOr<ModelManifest> manifest =
        ReadModelManifest(dir, &out.config);
    if (!manifest.ok()) return manifest.status();
    absl::StatusOr<SparseRows> rows =
        ReadSparseRows(dir, *manifest, merger.row_dim());
    if (!rows.ok()) return rows.status();
    merger.Apply(*std::move(rows));
    out.manifest = *manifest;
  }
  out.dir = newest_dir;
  out.version = chain->back().version;
  out.sparse = std::move(merger).Finish();
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

absl::StatusOr<std::vector<ChainMember>> ReadChainMembers(
    const std::string& root, uint64_t version) {
  return ChainOf(root, VersionDir(root, version), version);
}

absl::Status VerifyChainMember(const ChainMember& member) {
  for (const VersionFile& f : member.version.files()) {
    absl::Status s = VerifyFile(member.dir, {f.path(), f.size(), f.crc32()});
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<LoadedModel> ReadVersion(const std::string& root,
                                        uint64_t version) {
  return ReadChain(root, VersionDir(root, version), version, nullptr);
}

namespace {

// What a user's model path names: a chain (root, newest_dir, version) or,
// with `exported` set, the exported model directory newest_dir.
struct ModelPath {
  std::string root, newest_dir;
  uint64_t version = 0;
  bool exported = false;
};

absl::StatusOr<ModelPath> ResolveModelPath(const std::string& path) {
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string name = fs::path(dir).filename().string();
  std::string parent = fs::path(dir).parent_path().string();
  if (parent.empty()) parent = ".";
  if (absl::StartsWith(name, kStagingPrefix)) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is a staging directory of a version not yet ",
                     "published; it is never read"));
  }
  ModelPath out;
  if (Exists(absl::StrCat(dir, "/", kLatest))) {
    absl::StatusOr<uint64_t> latest = LatestVersion(dir);
    if (!latest.ok()) return latest.status();
    out.root = dir;
    out.version = *latest;
    out.newest_dir = VersionDir(dir, *latest);
    return out;
  }
  if (Exists(absl::StrCat(dir, "/", kVersionFile))) {
    absl::StatusOr<VersionManifest> m = ReadVersionFile(dir);
    if (!m.ok()) return m.status();
    out.root = parent;
    out.newest_dir = dir;
    out.version = m->version();
    return out;
  }
  uint64_t version = 0;
  if (ParseVersionName(name, &version) &&
      (Exists(absl::StrCat(parent, "/", kLatest)) ||
       !Exists(absl::StrCat(dir, "/MODEL")))) {
    out.root = parent;
    out.version = version;
    out.newest_dir = VersionDir(parent, version);
    return out;
  }
  out.newest_dir = dir;
  out.exported = true;
  return out;
}

}  // namespace

absl::StatusOr<LoadedModel> ReadModel(const std::string& path) {
  absl::StatusOr<ModelPath> resolved = ResolveModelPath(path);
  if (!resolved.ok()) return resolved.status();
  if (!resolved->exported) {
    return ReadChain(resolved->root, resolved->newest_dir, resolved->version,
                     nullptr);
  }
  LoadedModel out;
  out.dir = resolved->newest_dir;
  absl::StatusOr<ModelManifest> manifest =
      ReadModelManifest(out.dir, &out.config);
  if (!manifest.ok()) return manifest.status();
  out.manifest = *manifest;
  absl::StatusOr<SparseRows> rows = ReadSparseRows(out.dir, *manifest, 0);
  if (!rows.ok()) return rows.status();
  out.sparse = *std::move(rows);
  return out;
}

absl::StatusOr<std::vector<ChainMember>> ResolveChain(const std::string& path) {
  absl::StatusOr<ModelPath> resolved = ResolveModelPath(path);
  if (!resolved.ok()) return resolved.status();
  if (resolved->exported) {
    return std::vector<ChainMember>{{resolved->newest_dir, VersionManifest()}};
  }
  return ChainOf(resolved->root, resolved->newest_dir, resolved->version);
}

absl::StatusOr<std::vector<uint64_t>> ChainKeys(const std::string& root,
                                                uint64_t version, int part,
                                                int parts) {
  if (parts < 1 || part < 0 || part >= parts) {
    return absl::InvalidArgumentError(
        absl::StrCat("part ", part, " of ", parts, ": want 0 <= part < parts"));
  }
  absl::StatusOr<LoadedModel> model = ReadChain(
      root, VersionDir(root, version), version, [part, parts](uint64_t key) {
        return key % uint64_t(parts) == uint64_t(part);
      });
  if (!model.ok()) return model.status();
  std::vector<uint64_t> keys;
  keys.reserve(model->sparse.index.size());
  for (const auto& entry : model->sparse.index) keys.push_back(entry.first);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string DescribeModel(const LoadedModel& model) {
  if (!model.version.has_value()) return model.dir;
  const VersionManifest& m = *model.version;
  std::string kind =
      m.kind() == VersionManifest::BASE
          ? "base"
          : absl::StrCat("delta on base ", VersionName(m.base_version()));
  if (!m.pass().empty()) absl::StrAppend(&kind, ", pass ", m.pass());
  return absl::StrCat(VersionName(m.version()), " (", kind, ") in ",
                      fs::path(model.dir).parent_path().string());
}

}  // namespace sampan
