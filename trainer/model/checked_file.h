// Whole files guarded by a header and a CRC32, written atomically: the
// container of the model files (model_io.h, trainer/model_export.h).
//
//   magic[8]  u32 version  u64 body_bytes  u32 crc32(body)  body
//
// Promises: WriteCheckedFile never leaves a partial file at `path` (it writes
// `path`.tmp, fsyncs it and renames it over `path`); ReadCheckedFile returns
// the body exactly as written or an error naming the file and the fault --
// missing, truncated, another magic (another kind of file), another version,
// or corrupt (CRC32 mismatch). Integers are little-endian, as on every
// machine Sampan targets.
#ifndef SAMPAN_TRAINER_MODEL_CHECKED_FILE_H_
#define SAMPAN_TRAINER_MODEL_CHECKED_FILE_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sampan {

// `magic` is 8 bytes; `what` names the kind of file in errors.
struct FileKind {
  const char* magic;
  uint32_t version;
  const char* what;
};

// Unavailable (naming the file and errno) on an I/O error.
absl::Status WriteCheckedFile(const std::string& path, const FileKind& kind,
                              const std::string& body);

// NotFound when it cannot be opened; DataLoss when truncated, corrupt or not
// of `kind`; FailedPrecondition for another version.
absl::StatusOr<std::string> ReadCheckedFile(const std::string& path,
                                            const FileKind& kind);

// The first `n` bytes of the body (fewer when the body is shorter), with the
// magic and version checked as ReadCheckedFile does but not the CRC32, which
// covers the whole body: for reading the header of a large file.
absl::StatusOr<std::string> ReadCheckedFileHead(const std::string& path,
                                                const FileKind& kind, size_t n);

// A checked file's body read in pieces, for files too large to hold whole
// (a sparse model part, trainer/model_export.h). Open checks the header as
// ReadCheckedFile does and the body's CRC32 in one streaming pass (1 MiB
// held at a time); Read then reads any range of the body. Not thread-safe.
class CheckedFileReader {
 public:
  // Errors as ReadCheckedFile.
  static absl::StatusOr<std::unique_ptr<CheckedFileReader>> Open(
      const std::string& path, const FileKind& kind);
  ~CheckedFileReader();
  CheckedFileReader(const CheckedFileReader&) = delete;
  CheckedFileReader& operator=(const CheckedFileReader&) = delete;

  uint64_t body_bytes() const { return body_bytes_; }
  // Reads body bytes [offset, offset + n) into out. DataLoss past the end
  // (the file changed since Open), Unavailable on an I/O error.
  absl::Status Read(uint64_t offset, size_t n, char* out) const;

 private:
  CheckedFileReader(std::string path, int fd, uint64_t body_bytes)
      : path_(std::move(path)), fd_(fd), body_bytes_(body_bytes) {}
  const std::string path_;
  const int fd_;
  const uint64_t body_bytes_;
};

// Appends plain values to a body.
class BodyWriter {
 public:
  template <typename T>
  void Put(T v) {
    buf_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  void PutString(const std::string& s) {
    Put(uint32_t(s.size()));
    buf_ += s;
  }
  template <typename T>
  void PutArray(const std::vector<T>& v) {
    buf_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  std::string& buf() { return buf_; }

 private:
  std::string buf_;
};

// Reads values back; every Get returns false once the body runs out.
class BodyReader {
 public:
  explicit BodyReader(const std::string& body)
      : p_(body.data()), end_(body.data() + body.size()) {}
  template <typename T>
  bool Get(T* v) {
    if (size_t(end_ - p_) < sizeof(T)) return false;
    std::memcpy(v, p_, sizeof(T));
    p_ += sizeof(T);
    return true;
  }
  bool GetString(std::string* s);
  template <typename T>
  bool GetArray(size_t n, std::vector<T>* v) {
    if (size_t(end_ - p_) / sizeof(T) < n) return false;
    v->resize(n);
    // An empty vector's data() may be null, which memcpy must not see.
    if (n > 0) std::memcpy(v->data(), p_, n * sizeof(T));
    p_ += n * sizeof(T);
    return true;
  }
  bool AtEnd() const { return p_ == end_; }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_CHECKED_FILE_H_
