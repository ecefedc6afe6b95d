#include "coordinator/checkpoint_store.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/file_digest.h"
#include "common/log.h"
#include "google/protobuf/text_format.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

constexpr char kManifest[] = "MANIFEST";
constexpr char kPrefix[] = "ckpt-";
constexpr char kJobFile[] = "job.pbtxt";

// Parses the text proto at `path` into `out`: NotFound when it cannot be
// read, DataLoss naming it (as `what`) when it does not parse.
absl::Status ReadTextProto(const std::string& path, const char* what,
                           google::protobuf::Message* out) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
  std::stringstream text;
  text << in.rdbuf();
  if (!google::protobuf::TextFormat::ParseFromString(text.str(), out)) {
    return absl::DataLossError(absl::StrCat(path, ": not a valid ", what));
  }
  return absl::OkStatus();
}

// Epochs of the ckpt-<epoch> directories under root, ascending.
std::map<uint64_t, std::string> ListEpochs(const std::string& root) {
  std::map<uint64_t, std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    uint64_t epoch = 0;
    if (name.rfind(kPrefix, 0) == 0 &&
        absl::SimpleAtoi(name.substr(sizeof(kPrefix) - 1), &epoch)) {
      out[epoch] = e.path().string();
    }
  }
  return out;
}

}  // namespace

std::string CheckpointRoot(const JobConfig& config) {
  return config.checkpoint().dir().empty()
             ? absl::StrCat(config.output_dir(), "/checkpoints")
             : config.checkpoint().dir();
}

std::string PserverCheckpointDir(const std::string& root, uint64_t epoch,
                                 uint32_t index) {
  return absl::StrCat(CheckpointDir(root, epoch), "/pserver-", index);
}

std::string DenseCheckpointFile(const std::string& root, uint64_t steps) {
  return absl::StrCat(root, "/dense-step", steps, ".bin");
}

std::string CheckpointDir(const std::string& root, uint64_t epoch) {
  return absl::StrCat(root, "/", kPrefix, epoch);
}

uint64_t MaxCheckpointEpoch(const std::string& root) {
  const auto epochs = ListEpochs(root);
  return epochs.empty() ? 0 : epochs.rbegin()->first;
}

absl::Status WriteManifest(const std::string& dir,
                           coord::CheckpointManifest* manifest) {
  manifest->set_version(kManifestVersion);
  std::vector<std::string> skip = {kManifest, std::string(kManifest) + ".tmp"};
  for (const coord::ManifestFile& f : manifest->files()) {
    skip.push_back(f.path());
  }
  absl::StatusOr<std::vector<FileDigest>> files = DigestFiles(dir, skip);
  if (!files.ok()) return files.status();
  for (const FileDigest& file : *files) {
    coord::ManifestFile* f = manifest->add_files();
    f->set_path(file.path);
    f->set_size(file.size);
    f->set_crc32(file.crc32);
  }
  std::sort(manifest->mutable_files()->begin(),
            manifest->mutable_files()->end(),
            [](const coord::ManifestFile& a, const coord::ManifestFile& b) {
              return a.path() < b.path();
            });
  std::string text;
  google::protobuf::TextFormat::PrintToString(*manifest, &text);
  return WriteFileDurably(absl::StrCat(dir, "/", kManifest), text);
}

absl::StatusOr<coord::CheckpointManifest> ReadManifest(const std::string& dir,
                                                       bool verify) {
  const std::string path = absl::StrCat(dir, "/", kManifest);
  coord::CheckpointManifest manifest;
  if (absl::Status s = ReadTextProto(path, "manifest", &manifest); !s.ok()) {
    return s;
  }
  if (manifest.version() != kManifestVersion) {
    return absl::DataLossError(absl::StrCat(path, ": version ",
                                            manifest.version(), ", expected ",
                                            kManifestVersion));
  }
  for (const coord::ManifestFile& f : manifest.files()) {
    if (!verify) break;
    absl::Status s = VerifyFile(dir, {f.path(), f.size(), f.crc32()});
    if (!s.ok()) return s;
  }
  return manifest;
}

absl::Status WriteCheckpointConfig(const std::string& dir,
                                   const JobConfig& config) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  return WriteFileDurably(absl::StrCat(dir, "/", kJobFile), text);
}

absl::StatusOr<JobConfig> ReadCheckpointConfig(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kJobFile);
  JobConfig config;
  absl::Status s = ReadTextProto(path, "JobConfig text proto", &config);
  if (absl::IsNotFound(s)) {
    return absl::NotFoundError(absl::StrCat(
        path,
        " does not exist: the checkpoint was taken before checkpoints "
        "recorded their job's config"));
  }
  if (!s.ok()) return s;
  return config;
}

bool IsCheckpointPath(const std::string& path) {
  std::error_code ec;
  return fs::exists(absl::StrCat(path, "/", kManifest), ec) ||
         !ListEpochs(path).empty();
}

absl::StatusOr<std::string> ResolveCheckpoint(const std::string& path,
                                              bool verify) {
  std::error_code ec;
  if (!fs::exists(absl::StrCat(path, "/", kManifest), ec)) {
    return LatestCompleteCheckpoint(path);
  }
  absl::StatusOr<coord::CheckpointManifest> m = ReadManifest(path, verify);
  if (!m.ok()) return m.status();
  return path;
}

absl::StatusOr<std::string> LatestCompleteCheckpoint(const std::string& root) {
  const auto epochs = ListEpochs(root);
  for (auto it = epochs.rbegin(); it != epochs.rend(); ++it) {
    absl::StatusOr<coord::CheckpointManifest> m = ReadManifest(it->second);
    if (m.ok()) return it->second;
    if (!absl::IsNotFound(m.status())) {
      SAMPAN_LOG(WARNING) << "skipping checkpoint " << it->second << ": "
                          << m.status().message();
    }
  }
  return absl::NotFoundError(
      absl::StrCat("no complete checkpoint (with a valid MANIFEST) in ", root));
}

void PruneCheckpoints(const std::string& root, uint32_t keep) {
  const auto epochs = ListEpochs(root);
  std::vector<uint64_t> complete;
  for (const auto& [epoch, dir] : epochs) {
    if (fs::exists(absl::StrCat(dir, "/", kManifest)))
      complete.push_back(epoch);
  }
  if (complete.empty()) return;
  const uint64_t newest = complete.back();
  const size_t drop = complete.size() > keep ? complete.size() - keep : 0;
  std::error_code ec;
  for (const auto& [epoch, dir] : epochs) {
    const bool is_complete =
        std::binary_search(complete.begin(), complete.end(), epoch);
    const bool old_complete =
        is_complete && epoch < (drop > 0 ? complete[drop] : 0);
    if (old_complete || (!is_complete && epoch < newest)) {
      // The manifest goes first: a half-deleted checkpoint is incomplete.
      fs::remove(absl::StrCat(dir, "/", kManifest), ec);
      fs::remove_all(dir, ec);
      SAMPAN_LOG(INFO) << "removed checkpoint " << dir;
    }
  }
}

}  // namespace sampan
