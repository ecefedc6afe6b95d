#include "coordinator/checkpoint_store.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "google/protobuf/text_format.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

constexpr char kManifest[] = "MANIFEST";
constexpr char kPrefix[] = "ckpt-";

absl::StatusOr<uint32_t> Crc32OfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), buf.size());
    if (in.gcount() > 0) {
      crc = crc32(crc, reinterpret_cast<const Bytef*>(buf.data()),
                  static_cast<uInt>(in.gcount()));
    }
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat("reading ", path));
  return static_cast<uint32_t>(crc);
}

// fsyncs a file or a directory (to make a rename in it durable).
absl::Status Fsync(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::ErrnoToStatus(errno, "open " + path);
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  return rc == 0 ? absl::OkStatus() : absl::ErrnoToStatus(err, "fsync " + path);
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
  manifest->clear_files();
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file()) paths.push_back(e.path().string());
  }
  if (ec)
    return absl::InternalError(
        absl::StrCat("listing ", dir, ": ", ec.message()));
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : paths) {
    const std::string rel = fs::relative(path, dir).string();
    if (rel == kManifest || rel == std::string(kManifest) + ".tmp") continue;
    absl::StatusOr<uint32_t> crc = Crc32OfFile(path);
    if (!crc.ok()) return crc.status();
    coord::ManifestFile* f = manifest->add_files();
    f->set_path(rel);
    f->set_size(fs::file_size(path, ec));
    f->set_crc32(*crc);
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(*manifest, &text);
  const std::string tmp = absl::StrCat(dir, "/", kManifest, ".tmp");
  const std::string final_path = absl::StrCat(dir, "/", kManifest);
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (absl::Status s = Fsync(tmp); !s.ok()) return s;
  if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("rename to ", final_path));
  }
  return Fsync(dir);
}

absl::StatusOr<coord::CheckpointManifest> ReadManifest(const std::string& dir,
                                                       bool verify) {
  const std::string path = absl::StrCat(dir, "/", kManifest);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, " does not exist"));
  std::stringstream text;
  text << in.rdbuf();
  coord::CheckpointManifest manifest;
  if (!google::protobuf::TextFormat::ParseFromString(text.str(), &manifest)) {
    return absl::DataLossError(absl::StrCat(path, ": not a valid manifest"));
  }
  if (manifest.version() != kManifestVersion) {
    return absl::DataLossError(absl::StrCat(path, ": version ",
                                            manifest.version(), ", expected ",
                                            kManifestVersion));
  }
  for (const coord::ManifestFile& f : manifest.files()) {
    if (!verify) break;
    const std::string file = absl::StrCat(dir, "/", f.path());
    std::error_code ec;
    const uint64_t size = fs::file_size(file, ec);
    if (ec || size != f.size()) {
      return absl::DataLossError(absl::StrCat(
          file, ": ", ec ? ec.message() : absl::StrCat(size, " bytes"),
          ", manifest says ", f.size(), " bytes"));
    }
    absl::StatusOr<uint32_t> crc = Crc32OfFile(file);
    if (!crc.ok()) return crc.status();
    if (*crc != f.crc32()) {
      return absl::DataLossError(
          absl::StrCat(file, ": crc32 ", *crc, ", manifest says ", f.crc32()));
    }
  }
  return manifest;
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
