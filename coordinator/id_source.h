// Numbers that only increase and are never issued twice, across restarts
// of the process that issues them: the coordinator's writer ids and shard
// map versions.
//
// Writer ids (proto/ps.proto writer_id): a pserver applies a push only if
// its sequence is above the last one it applied for the push's writer id,
// per shard (sparse_table/sparse_table.h). A restarted trainer numbers its
// pushes from 1 again, so it must never get an id an earlier writer used:
// its pushes would be dropped as replays, silently. Shard map versions
// (common/shard_map.h): a client adopts a map only if its version is above
// its own, so a restarted coordinator must not start below the versions it
// handed out before.
//
// Numbers come in blocks. A block starts at the larger of the end of the
// last block reserved and the clock's milliseconds << 20, and is reserved
// durably (`state_file` written, fsynced and renamed into place) before any
// of its numbers is handed out. So a restarted coordinator that finds the
// file continues past every number issued, whatever its clock says; one that
// lost the file still starts above the numbers of any coordinator that
// started before it and issued fewer than 2^20 a millisecond.
//
// Thread-safe.
#ifndef SAMPAN_COORDINATOR_ID_SOURCE_H_
#define SAMPAN_COORDINATOR_ID_SOURCE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace sampan {

class IdSource {
 public:
  // Numbers reserved per write of the state file.
  static constexpr uint64_t kBlock = 1 << 10;

  // `state_file` empty: nothing is written (the clock floor alone). `now`
  // is for tests.
  explicit IdSource(std::string state_file,
                    std::function<absl::Time()> now = absl::Now);

  // A number above every one issued before, never 0. Unavailable naming the
  // file when the reservation cannot be written (none is handed out then).
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

#endif  // SAMPAN_COORDINATOR_ID_SOURCE_H_
