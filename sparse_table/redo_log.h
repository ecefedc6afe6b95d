// RedoLog: an append-only log of records in numbered segment files, the
// durability of the RocksDB backend's `redo_log` mode (DESIGN.md). Each
// record gets the next log sequence number (LSN) when appended; records
// reach the file in LSN order, so whatever survives a crash is a prefix.
//
// Promises: after WaitDurable(lsn) returns OK, records 1..lsn were written
// to the file (Options::sync = false: in the OS page cache, they survive a
// SIGKILL of the process) or written and fdatasynced (sync = true: they
// survive a machine crash). Concurrent waiters share one write and one
// fdatasync (group commit). Thread-safe. A failed write or fsync makes the
// log refuse every later append (the error is sticky): reopen it.
//
// Files: <dir>/redo-<first LSN, 20 digits>.log. Record framing (LE):
//   u32 length of payload | u32 masked CRC-32C of payload | payload
//   payload = body | u64 LSN
// On open, a torn last record of the last segment (a crash mid-write) is cut
// off with a warning, and the cut fsynced; any other bad record is DataLoss
// naming the file and the offset. The log's directory is created durably
// and, with sync, synced after segments are created or deleted.
//
// Push record body (EncodePush / DecodePush), little-endian:
//   u8 type = 1 | 3 x u8 0 | u32 n keys | u32 floats per key (pull_dim) |
//   u32 0 | u64 writer | u64 sequence | n x u64 keys |
//   n x pull_dim x f32 gradients | n x f32 shows | n x f32 clicks
#ifndef SAMPAN_SPARSE_TABLE_REDO_LOG_H_
#define SAMPAN_SPARSE_TABLE_REDO_LOG_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sparse_table/sparse_table.h"

namespace sampan {

class RedoLog {
 public:
  struct Options {
    std::string dir;
    // fdatasync before WaitDurable returns (Durability::kSync).
    bool sync = false;
    // A segment is closed and a new one begun past this size.
    uint64_t segment_bytes = 64ull << 20;
    // The longest WaitDurable waits for another thread's write.
    std::chrono::milliseconds wait_timeout{60000};
  };
  // Called on open for every intact record, in LSN order.
  using ReplayFn =
      std::function<absl::Status(uint64_t lsn, absl::string_view body)>;

  // Opens (creating) the log in options.dir and replays it. Appends then
  // continue at max(last LSN found, min_lsn) + 1, in a new segment.
  static absl::StatusOr<std::unique_ptr<RedoLog>> Open(const Options& options,
                                                       uint64_t min_lsn,
                                                       const ReplayFn& replay);
  ~RedoLog();

  // A record under construction: append the body to it, then Append it.
  static std::string NewRecord(size_t body_bytes);
  // Gives the record the next LSN and queues it for writing; returns the
  // LSN. Never blocks on I/O. The caller orders concurrent appends.
  uint64_t Append(std::string record);
  // Waits until records 1..lsn are durable (see the class comment).
  // Unavailable on a write error, DeadlineExceeded past wait_timeout.
  absl::Status WaitDurable(uint64_t lsn);
  // Writes and fdatasyncs everything appended so far.
  absl::Status Sync();
  // Deletes the segments all of whose records have LSNs below `lsn` (their
  // effects are durable elsewhere); may begin a new segment for that.
  absl::Status DeleteBelow(uint64_t lsn);

  // OK, or the sticky error of a failed write.
  absl::Status status() const;
  uint64_t last_lsn() const;
  uint64_t disk_bytes() const;

 private:
  struct Pending {
    uint64_t lsn;
    std::string record;
  };
  struct Segment {
    uint64_t first_lsn;
    std::string path;
    uint64_t bytes;
  };
  explicit RedoLog(Options o) : o_(std::move(o)) {}
  absl::Status Replay(uint64_t min_lsn, const ReplayFn& replay);
  absl::Status WriteOut(std::vector<Pending>& batch);
  absl::Status OpenSegment(uint64_t first_lsn)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(file_mu_);
  absl::Status WriteAll(const std::vector<Pending>& batch, size_t from,
                        size_t to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(file_mu_);

  const Options o_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t last_appended_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t durable_ ABSL_GUARDED_BY(mu_) = 0;
  bool leader_ ABSL_GUARDED_BY(mu_) = false;  // a thread is writing
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::vector<Pending> pending_ ABSL_GUARDED_BY(mu_);

  // Held by the one thread writing or deleting files. Order: mu_ is never
  // taken while waiting for file_mu_ (writers release mu_ first).
  mutable std::mutex file_mu_;
  int fd_ ABSL_GUARDED_BY(file_mu_) = -1;
  uint64_t written_ ABSL_GUARDED_BY(file_mu_) = 0;  // last LSN in a file
  std::vector<Segment> segments_ ABSL_GUARDED_BY(file_mu_);
};

// A push as the table logs it (the arrays are copies of the record's).
struct LoggedPush {
  uint64_t writer = 0, sequence = 0;
  uint32_t floats_per_key = 0;
  std::vector<uint64_t> keys;
  std::vector<float> grads, shows, clicks;
  PushBatch batch() const {
    return PushBatch{keys,          grads.data(), shows.data(),
                     clicks.data(), writer,       sequence};
  }
};

// Appends the push record body of `b` (floats_per_key per gradient row).
void EncodePush(const PushBatch& b, uint32_t floats_per_key,
                std::string* record);
// InvalidArgument (naming the field) unless `body` is a whole push record.
absl::StatusOr<LoggedPush> DecodePush(absl::string_view body);

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_REDO_LOG_H_
