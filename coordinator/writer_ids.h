// Writer ids for the trainers' pushes (proto/ps.proto writer_id), never
// issued twice.
//
// A pserver applies a push only if its sequence is above the last one it
// applied for the push's writer id, per shard (sparse_table/sparse_table.h).
// A restarted trainer numbers its pushes from 1 again, so it must never get
// an id an earlier writer used: its pushes would be dropped as replays,
// silently. The coordinator hands every trainer incarnation a fresh id from
// here.
//
// Ids come in blocks. A block starts at the larger of the end of the last
// block reserved and the clock's milliseconds << 20, and is reserved
// durably (`state_file` written, fsynced and renamed into place) before any
// of its ids is handed out. So a restarted coordinator that finds the file
// continues past every id issued, whatever its clock says; one that lost the
// file still starts above the ids of any coordinator that started before it
// and issued fewer than 2^20 ids a millisecond.
//
// Thread-safe.
#ifndef SAMPAN_COORDINATOR_WRITER_IDS_H_
#define SAMPAN_COORDINATOR_WRITER_IDS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace sampan {

class WriterIds {
 public:
  // Ids reserved per write of the state file.
  static constexpr uint64_t kBlock = 1 << 10;

  // `state_file` empty: nothing is written (the clock floor alone). `now`
  // is for tests.
  explicit WriterIds(std::string state_file,
                     std::function<absl::Time()> now = absl::Now);

  // A fresh id, never 0. Unavailable naming the file when the reservation
  // cannot be written (no id is handed out then).
  absl::StatusOr<uint64_t> Next();

 private:
  const std::string state_file_;
  const std::function<absl::Time()> now_;
  absl::Mutex mu_;
  bool loaded_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t block_end_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sampan

#endif  // SAMPAN_COORDINATOR_WRITER_IDS_H_
