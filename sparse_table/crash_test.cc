// Crash safety of the RocksDB backend, for each durability log (RocksDB's
// WAL, our redo log): a child process pushes continuously and is SIGKILLed
// after a random number of acknowledgements (0 included, so some kills land
// while it opens the database or replays the log), 24 times, alternating
// sync and wal durability. After every kill the parent reopens the table and
// checks that the applied pushes are exactly 1..L with L the last
// acknowledged sequence or the one after it (written, killed before the
// ack): every acknowledged push present, none twice. Each restarted child
// resends from the last acknowledged sequence + 1, so the one that may have
// been applied without an ack is replayed and must be deduplicated.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sparse_table/sparse_table.h"

namespace sampan {

std::vector<uint64_t> CrashKeysOf(uint64_t seq) {  // as crash_child.cc
  std::vector<uint64_t> keys(64);
  for (uint64_t j = 0; j < keys.size(); ++j) keys[j] = (seq * 7 + j * 13) % 997;
  return keys;
}

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
  std::vector<int> counts(997, 0);
  for (uint64_t s = 1; s <= last; ++s) {
    for (uint64_t k : CrashKeysOf(s)) ++counts[k];
  }
  return counts;
}

class CrashTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CrashTest, EveryAcknowledgedPushSurvivesSigkillExactlyOnce) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      std::string(tmp ? tmp : "/tmp") + "/crash_db_" + GetParam();
  std::filesystem::remove_all(dir);
  TableOptions o;
  o.durability_log = std::string(GetParam()) == "rocksdb_wal"
                         ? DurabilityLog::kRocksDbWal
                         : DurabilityLog::kRedoLog;
  if (std::string(GetParam()) == "redo_memtable") {
    o.write_back = WriteBack::kMemtable;
  }
  o.backend = Backend::kRocksDb;
  o.data_dir = dir;
  o.num_shards = 8;
  o.embedding_dim = 0;
  o.rule = OptimizerRule::kSgd;
  o.learning_rate = 1;
  std::vector<uint64_t> all(997);
  for (uint64_t k = 0; k < all.size(); ++k) all[k] = k;

  std::mt19937 rng(2026);
  uint64_t acked = 0;
  int kills_past_ack = 0;
  for (int round = 0; round < 24; ++round) {
    const int acks = std::uniform_int_distribution<int>(0, 120)(rng);
    acked = RunAndKill(dir, GetParam(), round % 2 == 0, acked + 1, acks);
    auto table = NewTable(o);
    ASSERT_TRUE(table.ok()) << table.status();
    std::vector<float> w(all.size());
    ASSERT_TRUE((*table)->Pull(all, false, w.data()).ok());
    const std::vector<int> exact = ExpectedCounts(acked);
    const std::vector<int> one_more = ExpectedCounts(acked + 1);
    std::vector<int> got(w.begin(), w.end());
    if (got == one_more && got != exact) {
      ++kills_past_ack;
    } else {
      ASSERT_EQ(got, exact) << "round " << round << ", last ack " << acked;
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
                                           "rocksdb_wal"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param);
                         });

}  // namespace
}  // namespace sampan
