#include "common/file_digest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

absl::Status IoError(const std::string& what, const std::string& path,
                     int err) {
  return absl::UnavailableError(
      absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

// Writes all of `contents` to `fd`.
bool WriteAll(int fd, const std::string& contents) {
  const char* p = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= size_t(n);
  }
  return true;
}

}  // namespace

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

DigestCache::DigestCache(std::function<bool(const std::string&)> immutable)
    : immutable_(std::move(immutable)) {}

bool DigestCache::Key::operator<(const Key& o) const {
  return std::tie(name, device, inode, size, mtime_ns) <
         std::tie(o.name, o.device, o.inode, o.size, o.mtime_ns);
}

uint64_t DigestCache::bytes_read() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_read_;
}

uint64_t DigestCache::bytes_reused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_reused_;
}

absl::StatusOr<std::vector<FileDigest>> DigestFiles(
    const std::string& dir, const std::vector<std::string>& skip,
    DigestCache* cache) {
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file()) paths.push_back(e.path().string());
  }
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("listing ", dir, ": ", ec.message()));
  }
  std::sort(paths.begin(), paths.end());
  const std::set<std::string> skipped(skip.begin(), skip.end());
  std::vector<FileDigest> out;
  std::map<DigestCache::Key, uint32_t> seen;  // the cache's next entries
  uint64_t read = 0, reused = 0;
  for (const std::string& path : paths) {
    FileDigest f;
    f.path = fs::relative(path, dir).string();
    if (skipped.count(f.path) > 0) continue;
    struct stat st;
    if (stat(path.c_str(), &st) != 0)
      return IoError("cannot stat", path, errno);
    f.size = static_cast<uint64_t>(st.st_size);
    const DigestCache::Key key{
        fs::path(path).filename().string(), static_cast<uint64_t>(st.st_dev),
        static_cast<uint64_t>(st.st_ino), f.size,
        int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
    const bool cacheable = cache != nullptr && cache->immutable_(f.path);
    bool known = false;
    if (cacheable) {
      std::lock_guard<std::mutex> lock(cache->mu_);
      auto it = cache->crc_.find(key);
      if (it != cache->crc_.end()) {
        f.crc32 = it->second;
        known = true;
      }
    }
    if (!known) {
      absl::StatusOr<uint32_t> crc = Crc32OfFile(path);
      if (!crc.ok()) return crc.status();
      f.crc32 = *crc;
      read += f.size;
    } else {
      reused += f.size;
    }
    if (cacheable) seen[key] = f.crc32;
    out.push_back(std::move(f));
  }
  if (cache != nullptr) {
    std::lock_guard<std::mutex> lock(cache->mu_);
    cache->crc_ = std::move(seen);
    cache->bytes_read_ += read;
    cache->bytes_reused_ += reused;
  }
  return out;
}

absl::Status VerifyFile(const std::string& dir, const FileDigest& file) {
  const std::string path = absl::StrCat(dir, "/", file.path);
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec || size != file.size) {
    return absl::DataLossError(absl::StrCat(
        path, ": ", ec ? ec.message() : absl::StrCat(size, " bytes"),
        ", manifest says ", file.size, " bytes"));
  }
  absl::StatusOr<uint32_t> crc = Crc32OfFile(path);
  if (!crc.ok()) return absl::DataLossError(crc.status().message());
  if (*crc != file.crc32) {
    return absl::DataLossError(
        absl::StrCat(path, ": crc32 ", *crc, ", manifest says ", file.crc32));
  }
  return absl::OkStatus();
}

absl::Status FsyncPath(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError("cannot open", path, errno);
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  return rc == 0 ? absl::OkStatus() : IoError("cannot fsync", path, err);
}

absl::Status CreateDirectoriesDurably(const std::string& dir) {
  // The missing levels, deepest first.
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = fs::absolute(dir, ec).lexically_normal();
       !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    if (p == p.parent_path()) break;
    missing.push_back(p);
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (!fs::create_directory(*it, ec) && ec) {
      return IoError("cannot create", it->string(), ec.value());
    }
    if (absl::Status st = FsyncPath(it->parent_path().string()); !st.ok()) {
      return st;
    }
  }
  if (!fs::is_directory(dir, ec)) {
    return IoError("cannot create", dir, ec ? ec.value() : ENOTDIR);
  }
  return absl::OkStatus();
}

absl::Status WriteFileDurably(const std::string& path,
                              const std::string& contents) {
  const std::string tmp = path + ".tmp";
  const int fd =
      open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("cannot create", tmp, errno);
  const bool ok = WriteAll(fd, contents) && fsync(fd) == 0;
  const int err = errno;
  if (close(fd) != 0 || !ok) {
    std::remove(tmp.c_str());
    return IoError("cannot write", tmp, ok ? errno : err);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_err = errno;
    std::remove(tmp.c_str());
    return IoError(absl::StrCat("cannot rename ", tmp, " to"), path,
                   rename_err);
  }
  const std::string parent = fs::path(path).parent_path().string();
  return FsyncPath(parent.empty() ? "." : parent);
}

}  // namespace sampan
