#include "trainer/model/checked_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "zlib.h"

namespace sampan {
namespace {

constexpr size_t kHeaderBytes = 8 + 4 + 8 + 4;

uint32_t Crc32(const char* data, size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large bodies in pieces.
  while (n > 0) {
    const uInt chunk = n > (1u << 30) ? (1u << 30) : uInt(n);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), chunk);
    data += chunk;
    n -= chunk;
  }
  return uint32_t(crc);
}

// Reads the header and the whole body (head == npos: checking its CRC32) or
// its first `head` bytes.
absl::StatusOr<std::string> ReadChecked(const std::string& path,
                                        const FileKind& kind, size_t head) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open ", kind.what, " ",
                                            path, ": ", std::strerror(errno)));
  }
  std::string data;
  if (head == std::string::npos) {
    data.assign(std::istreambuf_iterator<char>(in),
                std::istreambuf_iterator<char>());
  } else {
    data.resize(kHeaderBytes + head);
    in.read(data.data(), data.size());
    data.resize(size_t(in.gcount()));
    in.clear();
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  if (data.size() < kHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat(path, ": truncated (", data.size(), " bytes, a ",
                     kind.what, " has at least ", kHeaderBytes, ")"));
  }
  if (std::memcmp(data.data(), kind.magic, 8) != 0) {
    return absl::DataLossError(
        absl::StrCat(path, " is not a ", kind.what, " (bad magic)"));
  }
  const std::string header = data.substr(8, kHeaderBytes - 8);
  BodyReader r(header);
  uint32_t version = 0, crc = 0;
  uint64_t body = 0;
  r.Get(&version);
  r.Get(&body);
  r.Get(&crc);
  if (version != kind.version) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is ", kind.what, " format version ", version,
                     ", this build reads version ", kind.version));
  }
  if (head != std::string::npos) return data.substr(kHeaderBytes);
  if (data.size() - kHeaderBytes != body) {
    return absl::DataLossError(absl::StrCat(
        path, ": truncated or padded (body of ", data.size() - kHeaderBytes,
        " bytes, the header says ", body, ")"));
  }
  if (Crc32(data.data() + kHeaderBytes, body) != crc) {
    return absl::DataLossError(
        absl::StrCat(path, ": corrupt (CRC32 of the body does not match)"));
  }
  return data.substr(kHeaderBytes);
}

}  // namespace

bool BodyReader::GetString(std::string* s) {
  uint32_t n;
  if (!Get(&n) || size_t(end_ - p_) < n) return false;
  s->assign(p_, n);
  p_ += n;
  return true;
}

absl::StatusOr<std::unique_ptr<CheckedFileReader>> CheckedFileReader::Open(
    const std::string& path, const FileKind& kind) {
  absl::StatusOr<std::string> head = ReadChecked(path, kind, 0);
  if (!head.ok()) return head.status();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open ", kind.what, " ",
                                            path, ": ", std::strerror(errno)));
  }
  char header[kHeaderBytes];
  uint32_t crc = 0;
  uint64_t body = 0;
  if (pread(fd, header, kHeaderBytes, 0) != ssize_t(kHeaderBytes)) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat(path, ": truncated header"));
  }
  std::memcpy(&body, header + 12, 8);
  std::memcpy(&crc, header + 20, 4);
  std::unique_ptr<CheckedFileReader> reader(
      new CheckedFileReader(path, fd, body));
  std::string buf(1 << 20, '\0');
  uLong sum = crc32(0L, Z_NULL, 0);
  uint64_t at = 0;
  for (;;) {
    const ssize_t n = pread(fd, buf.data(), buf.size(), kHeaderBytes + at);
    if (n < 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
    }
    if (n == 0) break;
    sum = crc32(sum, reinterpret_cast<const Bytef*>(buf.data()), uInt(n));
    at += uint64_t(n);
  }
  if (at != body) {
    return absl::DataLossError(
        absl::StrCat(path, ": truncated or padded (body of ", at,
                     " bytes, the header says ", body, ")"));
  }
  if (uint32_t(sum) != crc) {
    return absl::DataLossError(
        absl::StrCat(path, ": corrupt (CRC32 of the body does not match)"));
  }
  return reader;
}

CheckedFileReader::~CheckedFileReader() { ::close(fd_); }

absl::Status CheckedFileReader::Read(uint64_t offset, size_t n,
                                     char* out) const {
  if (offset > body_bytes_ || n > body_bytes_ - offset) {
    return absl::DataLossError(
        absl::StrCat(path_, ": bytes ", offset, "+", n, " are past its body"));
  }
  while (n > 0) {
    const ssize_t got = pread(fd_, out, n, kHeaderBytes + offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return absl::UnavailableError(
          absl::StrCat("cannot read ", path_, ": ", std::strerror(errno)));
    }
    if (got == 0) {
      return absl::DataLossError(absl::StrCat(path_, ": shorter than at open"));
    }
    out += got;
    offset += uint64_t(got);
    n -= size_t(got);
  }
  return absl::OkStatus();
}

absl::Status WriteCheckedFile(const std::string& path, const FileKind& kind,
                              const std::string& body) {
  BodyWriter header;
  header.buf().append(kind.magic, 8);
  header.Put(kind.version);
  header.Put(uint64_t(body.size()));
  header.Put(Crc32(body.data(), body.size()));
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
  }
  const std::string& h = header.buf();
  const bool ok = std::fwrite(h.data(), 1, h.size(), f) == h.size() &&
                  std::fwrite(body.data(), 1, body.size(), f) == body.size() &&
                  std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    return absl::UnavailableError(
        absl::StrCat("cannot write ", tmp, ": ", std::strerror(err)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int rename_err = errno;
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat(
        "cannot rename ", tmp, " to ", path, ": ", std::strerror(rename_err)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadCheckedFile(const std::string& path,
                                            const FileKind& kind) {
  return ReadChecked(path, kind, std::string::npos);
}

absl::StatusOr<std::string> ReadCheckedFileHead(const std::string& path,
                                                const FileKind& kind,
                                                size_t n) {
  return ReadChecked(path, kind, n);
}

}  // namespace sampan
