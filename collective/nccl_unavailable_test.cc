// On a machine without a usable GPU (CI, this build machine) the NCCL backend
// must say so cleanly, and kAuto must not pick it.
#include "absl/strings/match.h"
#include "collective/communicator.h"
#include "gtest/gtest.h"

namespace sampan {
namespace collective {
namespace {

TEST(NcclUnavailableTest, ReportsUnavailableWithoutGpu) {
  absl::Status available = NcclAvailable();
  if (available.ok()) GTEST_SKIP() << "a GPU is present; nothing to check";
  EXPECT_EQ(available.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(available.message(), "nccl"))
      << available.message();

  CommunicatorOptions options;
  options.backend = Backend::kNccl;
  // No coordinator is needed: the check comes before any rendezvous.
  options.coordinator_address = "127.0.0.1:1";
  options.timeout = absl::Seconds(1);
  options.size = 2;
  auto comm = NewCommunicator(options);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kUnavailable)
      << comm.status();
}

TEST(NcclUnavailableTest, RejectsBadRank) {
  CommunicatorOptions options;
  options.rank = 2;
  options.size = 2;
  auto comm = NewCommunicator(options);
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace collective
}  // namespace sampan
