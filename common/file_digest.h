// Directories that prove their own completeness: the size and CRC32 of every
// file, checked again on read, and small files replaced atomically and
// durably. Checkpoints (coordinator/checkpoint_store.h) and model versions
// (trainer/model_version.h) list their files this way in a manifest that
// they write last.
//
// Promises: WriteFileDurably leaves at `path` either the old contents or the
// new ones, never a mix, and returns only once the new ones and the rename
// survive a machine crash; CreateDirectoriesDurably's directories survive
// one too. Errors name the file. Free functions without
// shared state, but for DigestCache.
#ifndef SAMPAN_COMMON_FILE_DIGEST_H_
#define SAMPAN_COMMON_FILE_DIGEST_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sampan {

// One file of a directory, as a manifest records it.
struct FileDigest {
  std::string path;  // relative to the directory
  uint64_t size = 0;
  uint32_t crc32 = 0;  // zlib's crc32 of the contents
};

// The zlib crc32 of the whole file: NotFound when it cannot be opened,
// DataLoss when reading fails.
absl::StatusOr<uint32_t> Crc32OfFile(const std::string& path);

// Digests of files that never change once written (RocksDB's SST files),
// reused by every directory that hard-links them: each checkpoint of a
// RocksDB table links mostly the SSTs of the one before, so only the new
// ones are read. An entry is keyed by the file's name, device, inode, size
// and modification time, and entries are kept only for the files the latest
// DigestFiles call saw. Thread-safe (one mutex; files are read without it).
class DigestCache {
 public:
  // `immutable(relative path)`: whether that file's contents never change.
  explicit DigestCache(std::function<bool(const std::string&)> immutable);
  DigestCache(const DigestCache&) = delete;
  DigestCache& operator=(const DigestCache&) = delete;

  // Bytes read to digest files, and bytes whose digest came from the cache,
  // since construction.
  uint64_t bytes_read() const;
  uint64_t bytes_reused() const;

 private:
  friend absl::StatusOr<std::vector<FileDigest>> DigestFiles(
      const std::string&, const std::vector<std::string>&, DigestCache*);
  struct Key {
    std::string name;  // the file's name (RocksDB never reuses one)
    uint64_t device, inode, size;
    int64_t mtime_ns;
    bool operator<(const Key& o) const;
  };
  const std::function<bool(const std::string&)> immutable_;
  mutable std::mutex mu_;
  std::map<Key, uint32_t> crc_;                 // guarded by mu_
  uint64_t bytes_read_ = 0, bytes_reused_ = 0;  // guarded by mu_
};

// Every regular file under `dir` (recursively) except those whose relative
// path is in `skip`, sorted by relative path. With a cache, the immutable
// files it knows are not read again.
absl::StatusOr<std::vector<FileDigest>> DigestFiles(
    const std::string& dir, const std::vector<std::string>& skip,
    DigestCache* cache = nullptr);

// OK when <dir>/<file.path> has file's size and crc32; DataLoss naming the
// file (and what differs) when it is missing or differs.
absl::Status VerifyFile(const std::string& dir, const FileDigest& file);

// fsyncs a file, or a directory to make the renames in it durable.
absl::Status FsyncPath(const std::string& path);

// Creates `dir` and any missing parent, like
// std::filesystem::create_directories, and fsyncs the parent of each one it
// created, so that none of them vanishes in a machine crash (a directory's
// new entry is durable only once the directory holding it is fsynced; the
// files later made in it cannot bring it back). Unavailable naming the
// directory on an error.
absl::Status CreateDirectoriesDurably(const std::string& dir);

// Writes `contents` to <path>.tmp, fsyncs it, renames it over `path` and
// fsyncs the directory. Unavailable naming the file on an I/O error.
absl::Status WriteFileDurably(const std::string& path,
                              const std::string& contents);

}  // namespace sampan

#endif  // SAMPAN_COMMON_FILE_DIGEST_H_
