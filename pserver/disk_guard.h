// DiskGuard: refuses writes while the disk under a directory is nearly full.
//
// Why: when a write fails for want of space, RocksDB 7.8 as Debian builds it
// (assertions on) aborts the process, and a pserver restarted on the same
// full disk aborts again while it recovers. Refusing pushes and snapshots
// with a clear error while there is still room keeps the data and the
// process intact; the job fails naming the disk and leaves its last
// checkpoint to resume from once there is room.
//
// Thread-safe. Check() reads statvfs at most every 100 ms.
#ifndef SAMPAN_PSERVER_DISK_GUARD_H_
#define SAMPAN_PSERVER_DISK_GUARD_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace sampan {

class DiskGuard {
 public:
  // `min_free_bytes` 0 turns the guard off.
  DiskGuard(std::string dir, uint64_t min_free_bytes);

  // OK while at least min_free_bytes are free under the directory (or the
  // free space cannot be read); otherwise FailedPrecondition naming the
  // directory, the free and the required bytes.
  absl::Status Check();

 private:
  const std::string dir_;
  const uint64_t min_free_bytes_;
  absl::Mutex mu_;
  absl::Time checked_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t free_bytes_ ABSL_GUARDED_BY(mu_) = UINT64_MAX;
};

}  // namespace sampan

#endif  // SAMPAN_PSERVER_DISK_GUARD_H_
