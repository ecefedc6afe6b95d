// Crash safety of the RocksDB backend, for each durability log (RocksDB's
// WAL, our redo log): a child process pushes continuously and is SIGKILLed
// after a random number of acknowledgements (0 included, so some kills land
// while it opens the database or replays the log), 24 times, alternating
// sync and wal durability. After every kill the parent reopens the table and
// checks that the applied pushes are exactly 1..L with L the last
// acknowledged sequence or the one after it (written, killed before the
// ack): every acknowledged push present, none twice. Each restarted child
// resends from the last acknowledged sequence + 1, so the one that may have
// been applied without an ack is replayed and must be deduplicated. The
// compact-format variants also compare every embedding word with a table
// that applied each push once.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sparse_table/crash_testlib.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

constexpr uint64_t kWriter = 42;

std::string ChildPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr || ws == nullptr) return "sparse_table/crash_child";
  return std::string(srcdir) + "/" + ws + "/sparse_table/crash_child";
}

// Starts the child, reads `acks` acknowledgements, SIGKILLs it, then drains
// the pipe. Returns the last acknowledged sequence (first - 1 if none).
uint64_t RunAndKill(const std::string& dir, const char* log, bool sync,
                    uint64_t first, int acks) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const std::string child = ChildPath(), seq = std::to_string(first),
                    writer = std::to_string(kWriter);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(child.c_str(), child.c_str(), dir.c_str(), sync ? "sync" : "wal",
          writer.c_str(), seq.c_str(), log, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  FILE* in = fdopen(fds[0], "r");
  uint64_t last = first - 1;
  unsigned long long s;
  for (int i = 0; i < acks && std::fscanf(in, "%llu", &s) == 1; ++i) last = s;
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status)) << "child exited early: " << status;
  while (std::fscanf(in, "%llu", &s) == 1) last = s;  // acked before death
  std::fclose(in);
  return last;
}

std::vector<int> ExpectedCounts(uint64_t last) {
  std::vector<int> counts(kCrashKeySpace, 0);
  for (uint64_t s = 1; s <= last; ++s) {
    for (uint64_t k : CrashKeysOf(s)) ++counts[k];
  }
  return counts;
}

// A memory table of `o`'s format that applied pushes 1..last once each
// pulls exactly `pulled`.
bool SameWordsAsReference(TableOptions o, uint64_t last,
                          const std::vector<uint64_t>& all,
                          const std::vector<float>& pulled) {
  o.backend = Backend::kMemory;
  auto ref = NewTable(o);
  if (!ref.ok()) return false;
  const std::vector<float> shows(64, 1), clicks(64, 0);
  for (uint64_t s = 1; s <= last; ++s) {
    const std::vector<uint64_t> keys = CrashKeysOf(s);
    const std::vector<float> grads = CrashGradsOf(s, (*ref)->pull_dim());
    PushBatch b{keys, grads.data(), shows.data(), clicks.data(), kWriter, s};
    if (!(*ref)->Push(b).ok()) return false;
  }
  std::vector<float> want(pulled.size());
  if (!(*ref)->Pull(all, false, want.data()).ok()) return false;
  return std::memcmp(want.data(), pulled.data(), want.size() * 4) == 0;
}

class CrashTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CrashTest, EveryAcknowledgedPushSurvivesSigkillExactlyOnce) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      std::string(tmp ? tmp : "/tmp") + "/crash_db_" + GetParam();
  std::filesystem::remove_all(dir);
  const TableOptions o = CrashOptions(dir, GetParam(), false);
  std::vector<uint64_t> all(kCrashKeySpace);
  for (uint64_t k = 0; k < all.size(); ++k) all[k] = k;

  std::mt19937 rng(2026);
  uint64_t acked = 0;
  int kills_past_ack = 0;
  for (int round = 0; round < 24; ++round) {
    const int acks = std::uniform_int_distribution<int>(0, 120)(rng);
    acked = RunAndKill(dir, GetParam(), round % 2 == 0, acked + 1, acks);
    auto table = NewTable(o);
    ASSERT_TRUE(table.ok()) << table.status();
    const uint32_t pd = (*table)->pull_dim();
    std::vector<float> pulled(all.size() * pd);
    ASSERT_TRUE((*table)->Pull(all, false, pulled.data()).ok());
    std::vector<int> got(all.size());
    for (size_t k = 0; k < all.size(); ++k) got[k] = pulled[k * pd];
    const std::vector<int> exact = ExpectedCounts(acked);
    const std::vector<int> one_more = ExpectedCounts(acked + 1);
    uint64_t applied = acked;
    if (got == one_more && got != exact) {
      ++kills_past_ack;
      applied = acked + 1;
    } else {
      ASSERT_EQ(got, exact) << "round " << round << ", last ack " << acked;
    }
    if (pd > 1) {
      // The embedding too, word for word: a memory table of the same
      // format given pushes 1..applied once each. Replays after the kills
      // rounded exactly as the first applications did.
      ASSERT_TRUE(SameWordsAsReference(o, applied, all, pulled))
          << "round " << round << ", applied through " << applied;
    }
  }
  EXPECT_GT(acked, 100u);
  std::printf(
      "%s: 24 kills, %llu pushes acknowledged, %d killed between write "
      "and ack\n",
      GetParam(), static_cast<unsigned long long>(acked), kills_past_ack);
}

INSTANTIATE_TEST_SUITE_P(EveryLog, CrashTest,
                         ::testing::Values("redo", "redo_memtable",
                                           "rocksdb_wal", "redo_int8",
                                           "rocksdb_wal_fp16"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param);
                         });

}  // namespace
}  // namespace sampan
