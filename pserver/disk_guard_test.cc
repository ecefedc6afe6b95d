#include "pserver/disk_guard.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace sampan {
namespace {

TEST(DiskGuard, RefusesBelowTheReserveAndNamesTheDirectory) {
  const std::string dir =
      std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
  EXPECT_TRUE(DiskGuard(dir, 0).Check().ok());  // off
  EXPECT_TRUE(DiskGuard(dir, 1).Check().ok());  // a byte is free
  absl::Status s = DiskGuard(dir, UINT64_MAX / 2).Check();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find(dir), std::string::npos) << s;
  EXPECT_NE(s.message().find("min_free_disk_bytes"), std::string::npos) << s;
}

}  // namespace
}  // namespace sampan
