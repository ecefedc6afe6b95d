// A shard move's durability under a process crash, in each RocksDB mode:
// a child (shard_move_child) imports a shard or drops one and is SIGKILLed
// right after the call returned; the reopened table must hold what the call
// promised. The child's tables have pushes of their own in the shard
// beforehand, which stay in the redo log: recovery must not replay them onto
// the imported or dropped shard. The expected content comes from a memory
// table given the same pushes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "gtest/gtest.h"
#include "sparse_table/shard_move_testlib.h"

namespace sampan {
namespace {

constexpr uint32_t kShard = 2;  // as shard_move_child.cc

std::string ChildPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || ws == nullptr) {
    return "sparse_table/shard_move_child";
  }
  return absl::StrCat(srcdir, "/", ws, "/sparse_table/shard_move_child");
}

// Runs the child until it prints "done", then SIGKILLs it.
void RunAndKill(const std::string& mode, const std::string& a,
                const std::string& b, const std::string& op) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string child = ChildPath();
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(child.c_str(), child.c_str(), mode.c_str(), a.c_str(), b.c_str(),
          op.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  FILE* out = fdopen(fds[0], "r");
  char line[64] = {0};
  const bool done = std::fgets(line, sizeof line, out) != nullptr;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  std::fclose(out);
  ASSERT_TRUE(done && std::string(line) == "done\n")
      << "child exited early, status " << status;
}

ShardContent Content(SparseTable& t, uint32_t shard) {
  absl::StatusOr<ShardContent> c = ExportAll(t, shard);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *c : ShardContent();
}

// The content a memory table has after `writer`'s rounds.
ShardContent Expected(uint64_t writer, int rounds, uint32_t shard) {
  std::unique_ptr<SparseTable> t =
      NewMemoryTable(MoveTableOptions(MoveModeNamed("Memory"), ""));
  EXPECT_TRUE(PushRounds(*t, writer, 1, rounds, MoveKeys(200)).ok());
  return Content(*t, shard);
}

class ShardMoveCrashTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    root_ = absl::StrCat(testing::TempDir(), "/crash_", GetParam(), "_",
                         testing::UnitTest::GetInstance()->random_seed());
    std::filesystem::remove_all(root_);
  }
  std::unique_ptr<SparseTable> Reopen() {
    auto t =
        NewTable(MoveTableOptions(MoveModeNamed(GetParam()), root_ + "/b"));
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(*t) : nullptr;
  }
  std::string root_;
};

TEST_P(ShardMoveCrashTest, ImportKeepsRowsAndSequences) {
  RunAndKill(GetParam(), root_ + "/a", root_ + "/b", "import");
  std::unique_ptr<SparseTable> b = Reopen();
  ASSERT_NE(b, nullptr);
  const ShardContent want = Expected(11, 3, kShard);
  ASSERT_FALSE(want.rows.empty());
  const ShardContent got = Content(*b, kShard);
  EXPECT_EQ(got.rows, want.rows);
  EXPECT_EQ(got.sequences, (std::map<uint64_t, uint64_t>{{11, 3}}));
  const uint32_t other = kShard + 1;
  EXPECT_EQ(Content(*b, other).rows, Expected(9, 2, other).rows);
  // The source's last push is a duplicate here.
  std::vector<uint64_t> mine;
  for (uint64_t k : MoveKeys(200)) {
    if (ShardOf(k, kMoveShards) == kShard) mine.push_back(k);
  }
  absl::StatusOr<PushResult> replay = PushRounds(*b, 11, 3, 1, mine);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->applied_keys, 0u);
}

TEST_P(ShardMoveCrashTest, DropStaysDropped) {
  RunAndKill(GetParam(), root_ + "/a", root_ + "/b", "drop");
  std::unique_ptr<SparseTable> b = Reopen();
  ASSERT_NE(b, nullptr);
  const ShardContent got = Content(*b, kShard);
  EXPECT_TRUE(got.rows.empty()) << got.rows.size() << " rows came back";
  EXPECT_TRUE(got.sequences.empty());
  const uint32_t other = kShard + 1;
  EXPECT_EQ(Content(*b, other).rows, Expected(9, 2, other).rows);
}

INSTANTIATE_TEST_SUITE_P(Modes, ShardMoveCrashTest,
                         ::testing::Values("RocksDbWal", "RedoSst",
                                           "RedoMemtable"));

}  // namespace
}  // namespace sampan
