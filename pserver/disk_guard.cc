#include "pserver/disk_guard.h"

#include <sys/statvfs.h>

#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace sampan {

DiskGuard::DiskGuard(std::string dir, uint64_t min_free_bytes)
    : dir_(std::move(dir)), min_free_bytes_(min_free_bytes) {}

absl::Status DiskGuard::Check() {
  if (min_free_bytes_ == 0 || dir_.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  if (now - checked_ >= absl::Milliseconds(100)) {
    struct statvfs st;
    if (statvfs(dir_.c_str(), &st) == 0) {
      free_bytes_ = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    }
    checked_ = now;
  }
  if (free_bytes_ >= min_free_bytes_) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "disk full: %.1f MiB free under %s, below table.min_free_disk_bytes "
      "(%.1f MiB); refusing writes until there is room",
      free_bytes_ / 1048576.0, dir_, min_free_bytes_ / 1048576.0));
}

}  // namespace sampan
