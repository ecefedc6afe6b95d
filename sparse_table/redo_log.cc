#include "sparse_table/redo_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/file_digest.h"
#include "common/log.h"
#include "sparse_table/crc32c.h"

namespace sampan {
namespace {

constexpr size_t kHeader = 8;  // u32 length | u32 masked CRC
constexpr size_t kMaxIov = 1024;
constexpr uint8_t kPushType = 1;
constexpr size_t kPushFixed = 32;  // the push body before its keys

uint32_t Le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t Le64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

std::string SegmentName(uint64_t first_lsn) {
  char name[48];
  std::snprintf(name, sizeof(name), "redo-%020llu.log",
                static_cast<unsigned long long>(first_lsn));
  return name;
}

// The first LSN a segment file's name carries, or 0 if it is not one.
uint64_t SegmentLsn(const std::string& name) {
  unsigned long long lsn = 0;
  char tail[8] = {0};
  if (name.size() != 29 ||
      std::sscanf(name.c_str(), "redo-%20llu.%3s", &lsn, tail) != 2 ||
      std::string(tail) != "log") {
    return 0;
  }
  return lsn;
}

absl::Status Errno(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

absl::Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open " + dir);
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : Errno("fsync " + dir);
}

// Cuts `path` to `size` and fdatasyncs it. Undone by a machine crash, the
// cut would bring the torn record back in front of the records logged after
// it, in a segment that is no longer the last: DataLoss at the next open.
absl::Status TruncateDurably(const std::string& path, uint64_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Errno("open " + path);
  const bool ok = ::ftruncate(fd, size) == 0 && ::fdatasync(fd) == 0;
  const int err = errno;
  ::close(fd);
  errno = err;
  return ok ? absl::OkStatus() : Errno("truncate " + path);
}

bool AllZero(const std::string& data, size_t from) {
  return std::all_of(data.begin() + from, data.end(),
                     [](char c) { return c == 0; });
}

// Why the record at `off` is bad, or "" if it is intact; *end = its end.
std::string CheckRecord(const std::string& data, size_t off, size_t* end) {
  if (data.size() - off < kHeader) return "header cut short";
  const uint32_t len = Le32(&data[off]);
  if (len < 8) return absl::StrCat("payload length ", len, " (expected >= 8)");
  if (data.size() - off - kHeader < len) {
    return absl::StrCat("payload of ", len, " bytes runs past the end");
  }
  *end = off + kHeader + len;
  const uint32_t want = crc32c::Unmask(Le32(&data[off + 4]));
  if (crc32c::Value(&data[off + kHeader], len) != want) return "CRC mismatch";
  return "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedoLog>> RedoLog::Open(const Options& options,
                                                       uint64_t min_lsn,
                                                       const ReplayFn& replay) {
  // Durably: a segment's records are lost with a directory whose entry was
  // never synced (RocksDB syncs the pserver's directory when it next writes
  // a file there, which a table writing back through the memtable may not
  // do for hours).
  if (absl::Status st = CreateDirectoriesDurably(options.dir); !st.ok()) {
    return st;
  }
  std::unique_ptr<RedoLog> log(new RedoLog(options));
  if (absl::Status st = log->Replay(min_lsn, replay); !st.ok()) return st;
  return log;
}

absl::Status RedoLog::Replay(uint64_t min_lsn, const ReplayFn& replay) {
  std::vector<std::pair<uint64_t, std::string>> files;
  for (const auto& e : std::filesystem::directory_iterator(o_.dir)) {
    const uint64_t lsn = SegmentLsn(e.path().filename().string());
    if (lsn != 0) files.emplace_back(lsn, e.path().string());
  }
  std::sort(files.begin(), files.end());
  uint64_t last = 0;
  std::lock_guard<std::mutex> lock(file_mu_);
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i].second;
    std::ifstream in(path, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
    if (in.bad()) return absl::UnavailableError("read " + path);
    size_t off = 0;
    uint64_t expect = files[i].first;
    if (expect <= last) {
      return absl::DataLossError(absl::StrCat(
          "redo log ", path, ": starts at LSN ", expect, ", expected above ",
          last, " (the previous segment's last)"));
    }
    last = expect - 1;  // an empty last segment still fixes the next LSN
    while (off < data.size()) {
      size_t end = 0;
      std::string why = CheckRecord(data, off, &end);
      if (why.empty() && Le64(&data[end - 8]) != expect) {
        why = absl::StrCat("LSN ", Le64(&data[end - 8]), ", expected ", expect);
      }
      if (!why.empty()) {
        const bool torn =
            i + 1 == files.size() &&
            (end == 0 || end == data.size() || AllZero(data, off));
        if (!torn) {
          return absl::DataLossError(absl::StrCat(
              "redo log ", path, ": bad record at offset ", off, ": ", why));
        }
        SAMPAN_LOG(WARNING) << "redo log " << path << ": torn last record at "
                            << "offset " << off << " (" << why
                            << "), ignored: a crash cut it short";
        if (absl::Status st = TruncateDurably(path, off); !st.ok()) return st;
        break;
      }
      const absl::string_view body(&data[off + kHeader], end - off - 16);
      if (absl::Status st = replay(expect, body); !st.ok()) return st;
      last = expect++;
      off = end;
    }
    segments_.push_back({files[i].first, path, off});
  }
  // Empty segments (made just before a crash) hold nothing: drop them.
  for (auto it = segments_.begin(); it != segments_.end();) {
    if (it->bytes != 0) {
      ++it;
      continue;
    }
    std::filesystem::remove(it->path);
    it = segments_.erase(it);
  }
  const uint64_t next = std::max(last, min_lsn) + 1;
  {
    std::lock_guard<std::mutex> l(mu_);
    last_appended_ = durable_ = next - 1;
  }
  written_ = next - 1;
  return OpenSegment(next);
}

RedoLog::~RedoLog() {
  Sync().IgnoreError();
  std::lock_guard<std::mutex> lock(file_mu_);
  if (fd_ >= 0) ::close(fd_);
}

absl::Status RedoLog::OpenSegment(uint64_t first_lsn) {
  if (fd_ >= 0) {
    // Closed segments are always synced, so Sync() need only sync the last.
    if (::fdatasync(fd_) != 0)
      return Errno("fdatasync " + segments_.back().path);
    ::close(fd_);
    fd_ = -1;
  }
  const std::string path = o_.dir + "/" + SegmentName(first_lsn);
  fd_ = ::open(path.c_str(),
               O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) return Errno("open " + path);
  segments_.push_back({first_lsn, path, 0});
  return o_.sync ? SyncDir(o_.dir) : absl::OkStatus();
}

std::string RedoLog::NewRecord(size_t body_bytes) {
  std::string r;
  r.reserve(kHeader + body_bytes + 8);
  r.resize(kHeader);
  return r;
}

uint64_t RedoLog::Append(std::string record) {
  // The body's CRC outside the lock; only the LSN's 8 bytes inside.
  const uint32_t body_crc =
      crc32c::Value(record.data() + kHeader, record.size() - kHeader);
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t lsn = ++last_appended_;
  Put(&record, lsn);
  const uint32_t len = record.size() - kHeader;
  const uint32_t crc = crc32c::Mask(crc32c::Extend(body_crc, &lsn, 8));
  std::memcpy(&record[0], &len, 4);
  std::memcpy(&record[4], &crc, 4);
  pending_.push_back({lsn, std::move(record)});
  return lsn;
}

absl::Status RedoLog::WaitDurable(uint64_t lsn) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + o_.wait_timeout;
  while (true) {
    if (!error_.ok()) return error_;
    if (durable_ >= lsn) return absl::OkStatus();
    if (!leader_) {
      // Lead: write everything queued so far, waiters included.
      leader_ = true;
      std::vector<Pending> batch;
      batch.swap(pending_);
      const uint64_t upto = last_appended_;
      lock.unlock();
      absl::Status st = WriteOut(batch);
      lock.lock();
      leader_ = false;
      if (st.ok()) {
        durable_ = std::max(durable_, upto);
      } else {
        error_ = st;
      }
      cv_.notify_all();
      continue;
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout &&
        durable_ < lsn && leader_) {
      return absl::DeadlineExceededError(
          absl::StrCat("redo log ", o_.dir, ": LSN ", lsn,
                       " not written after ", o_.wait_timeout.count(), " ms"));
    }
  }
}

absl::Status RedoLog::WriteOut(std::vector<Pending>& batch) {
  std::lock_guard<std::mutex> lock(file_mu_);
  size_t from = 0;
  uint64_t bytes = segments_.back().bytes;  // once batch[from, j) is written
  for (size_t j = 0; j < batch.size(); ++j) {
    if (bytes < o_.segment_bytes) {
      bytes += batch[j].record.size();
      continue;
    }
    if (absl::Status st = WriteAll(batch, from, j); !st.ok()) return st;
    if (absl::Status st = OpenSegment(batch[j].lsn); !st.ok()) return st;
    from = j;
    bytes = batch[j].record.size();
  }
  if (absl::Status st = WriteAll(batch, from, batch.size()); !st.ok()) {
    return st;
  }
  if (o_.sync && ::fdatasync(fd_) != 0) {
    return Errno("fdatasync " + segments_.back().path);
  }
  return absl::OkStatus();
}

// Writes batch[from, to) to the open segment (writev, partial writes
// resumed).
absl::Status RedoLog::WriteAll(const std::vector<Pending>& batch, size_t from,
                               size_t to) {
  std::vector<iovec> iov;
  while (from < to) {
    iov.clear();
    for (size_t j = from; j < to && iov.size() < kMaxIov; ++j) {
      iov.push_back(
          {const_cast<char*>(batch[j].record.data()), batch[j].record.size()});
    }
    const size_t count = iov.size();
    size_t done = 0;
    while (done < count) {
      const ssize_t n = ::writev(fd_, &iov[done], count - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Errno("write " + segments_.back().path);
      segments_.back().bytes += n;
      for (size_t left = n; left > 0;) {
        const size_t take = std::min(left, iov[done].iov_len);
        iov[done].iov_base = static_cast<char*>(iov[done].iov_base) + take;
        iov[done].iov_len -= take;
        left -= take;
        if (iov[done].iov_len == 0) ++done;
      }
      while (done < count && iov[done].iov_len == 0) ++done;
    }
    written_ = batch[from + count - 1].lsn;
    from += count;
  }
  return absl::OkStatus();
}

absl::Status RedoLog::Sync() {
  uint64_t last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = last_appended_;
  }
  if (absl::Status st = WaitDurable(last); !st.ok()) return st;
  if (o_.sync) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(file_mu_);
  if (fd_ >= 0 && ::fdatasync(fd_) != 0) {
    return Errno("fdatasync " + segments_.back().path);
  }
  return absl::OkStatus();
}

absl::Status RedoLog::DeleteBelow(uint64_t lsn) {
  std::lock_guard<std::mutex> lock(file_mu_);
  if (segments_.back().bytes > 0 && written_ < lsn) {
    if (absl::Status st = OpenSegment(written_ + 1); !st.ok()) return st;
  }
  size_t drop = 0;
  while (drop + 1 < segments_.size() && segments_[drop + 1].first_lsn <= lsn) {
    if (::unlink(segments_[drop].path.c_str()) != 0 && errno != ENOENT) {
      return Errno("delete " + segments_[drop].path);
    }
    ++drop;
  }
  segments_.erase(segments_.begin(), segments_.begin() + drop);
  // Synced, deleted segments stay deleted after a machine crash; otherwise
  // each one comes back and is read (and skipped) at every open until the
  // directory is next synced.
  return o_.sync && drop > 0 ? SyncDir(o_.dir) : absl::OkStatus();
}

absl::Status RedoLog::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

uint64_t RedoLog::last_lsn() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_appended_;
}

uint64_t RedoLog::disk_bytes() const {
  std::lock_guard<std::mutex> lock(file_mu_);
  uint64_t n = 0;
  for (const Segment& s : segments_) n += s.bytes;
  return n;
}

void EncodePush(const PushBatch& b, uint32_t floats_per_key,
                std::string* record) {
  const uint32_t n = b.keys.size();
  Put<uint8_t>(record, kPushType);
  record->append(3, '\0');
  Put(record, n);
  Put(record, floats_per_key);
  Put<uint32_t>(record, 0);
  Put(record, b.writer_id);
  Put(record, b.sequence);
  record->append(reinterpret_cast<const char*>(b.keys.data()), size_t{n} * 8);
  record->append(reinterpret_cast<const char*>(b.grads),
                 size_t{n} * floats_per_key * 4);
  record->append(reinterpret_cast<const char*>(b.shows), size_t{n} * 4);
  record->append(reinterpret_cast<const char*>(b.clicks), size_t{n} * 4);
}

absl::StatusOr<LoggedPush> DecodePush(absl::string_view body) {
  if (body.size() < kPushFixed || uint8_t(body[0]) != kPushType) {
    return absl::InvalidArgumentError(
        absl::StrCat("push record: ", body.size(), " bytes, type ",
                     body.empty() ? -1 : int(uint8_t(body[0])),
                     " (expected type 1, >= ", kPushFixed, " bytes)"));
  }
  LoggedPush p;
  const uint64_t n = Le32(&body[4]);
  p.floats_per_key = Le32(&body[8]);
  p.writer = Le64(&body[16]);
  p.sequence = Le64(&body[24]);
  const uint64_t want = kPushFixed + n * 8 + n * (p.floats_per_key + 2) * 4;
  if (body.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push record: ", body.size(), " bytes for ", n, " keys of ",
        p.floats_per_key, " floats (expected ", want, ")"));
  }
  const char* at = body.data() + kPushFixed;
  auto take = [&at](auto& v, size_t count) {
    v.resize(count);
    std::memcpy(v.data(), at, count * sizeof(v[0]));
    at += count * sizeof(v[0]);
  };
  take(p.keys, n);
  take(p.grads, n * p.floats_per_key);
  take(p.shows, n);
  take(p.clicks, n);
  return p;
}

}  // namespace sampan
