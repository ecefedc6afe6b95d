// Reading model versions (trainer/model_version.h): a chain's VERSIONs,
// its rows merged base first, and the model paths users give.
#include <algorithm>
#include <filesystem>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_digest.h"
#include "common/log.h"
#include "trainer/model_version.h"
#include "trainer/version_files.h"

namespace sampan {

using version_files::ChainName;
using version_files::CheckChainMember;
using version_files::Exists;
using version_files::kLatest;
using version_files::kStagingPrefix;
using version_files::kVersionFile;
using version_files::ParseVersionName;
using version_files::ReadVersionFile;
using version_files::VersionName;

namespace {

namespace fs = std::filesystem;

// Which keys a read keeps; null keeps all.
using KeyFilter = std::function<bool(uint64_t)>;

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

}  // namespace

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
