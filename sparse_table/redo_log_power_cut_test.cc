// The redo log across two machine crashes, the second cut by tests/crashfs
// (every byte and name not fsynced lost): the first crash left a torn last
// record, which the next open cuts off before it logs more. Were that cut
// not fsynced, the second crash would bring the torn record back in front
// of the records logged after it, and the log would refuse to open
// (DataLoss) with every acknowledged push in it.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sparse_table/redo_log.h"

namespace sampan {
namespace {

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (ws ? ws : "sampan") + "/" +
         path;
}

std::vector<std::string> Bodies(const RedoLog::Options& o,
                                absl::Status* status) {
  std::vector<std::string> got;
  auto log = RedoLog::Open(o, 0, [&](uint64_t, absl::string_view body) {
    got.emplace_back(body);
    return absl::OkStatus();
  });
  *status = log.status();
  return got;
}

TEST(RedoLogPowerCutTest, TornRecordCutOffStaysCutAfterAnotherCrash) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string root = std::string(tmp ? tmp : "/tmp") + "/power_cut";
  std::filesystem::remove_all(root);
  RedoLog::Options o;
  o.dir = root + "/redo";
  o.sync = true;
  {
    auto log = RedoLog::Open(
        o, 0, [](uint64_t, absl::string_view) { return absl::OkStatus(); });
    ASSERT_TRUE(log.ok()) << log.status();
    uint64_t last = 0;
    for (const char* b : {"first", "second", "third"}) {
      std::string r = RedoLog::NewRecord(6);
      r += b;
      last = (*log)->Append(std::move(r));
    }
    ASSERT_TRUE((*log)->WaitDurable(last).ok());
  }
  // The first crash: the third record only partly on disk.
  std::string segment;
  for (const auto& e : std::filesystem::directory_iterator(o.dir)) {
    if (std::filesystem::file_size(e.path()) > 0) segment = e.path().string();
  }
  ASSERT_FALSE(segment.empty());
  std::filesystem::resize_file(segment,
                               std::filesystem::file_size(segment) - 3);

  // Reopened under crashfs: the torn record is cut, "after" logged, and the
  // process dies; then the power cut.
  const std::string state = root + "/crashfs";
  const std::string run =
      "ASAN_OPTIONS=$ASAN_OPTIONS:verify_asan_link_order=0 LD_PRELOAD=" +
      Runfile("tests/crashfs/libcrashfs.so") +
      " CRASHFS_VERIFY=1 CRASHFS_ROOT=" + o.dir + " CRASHFS_STATE=" + state +
      " " + Runfile("sparse_table/redo_log_cut_child") + " " + o.dir;
  const int rc = std::system(run.c_str());
  ASSERT_TRUE((WIFSIGNALED(rc) && WTERMSIG(rc) == SIGKILL) ||
              (WIFEXITED(rc) && WEXITSTATUS(rc) == 128 + SIGKILL))
      << "child: " << rc;
  ASSERT_EQ(std::system((Runfile("tests/crashfs/crashfs_rewind") + " " + state +
                         " " + o.dir)
                            .c_str()),
            0);

  absl::Status st;
  const std::vector<std::string> got = Bodies(o, &st);
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_EQ(got, (std::vector<std::string>{"first", "second", "after"}));
}

}  // namespace
}  // namespace sampan
