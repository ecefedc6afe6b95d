// The RocksDB backend in redo log mode: recovery replays exactly what was
// acknowledged, whatever the flusher had written when the process died.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sparse_table/row_store.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/redo_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TableOptions Options(const std::string& dir) {
  TableOptions o;
  o.backend = Backend::kRocksDb;
  o.durability_log = DurabilityLog::kRedoLog;
  o.data_dir = dir;
  o.num_shards = 8;
  o.embedding_dim = 3;
  o.rule = OptimizerRule::kAdagrad;  // order-sensitive: replay must match
  o.learning_rate = 0.3f;
  o.embedx_threshold = 0.25f;
  return o;
}

struct Step {
  std::vector<uint64_t> keys;
  std::vector<float> grads, shows, clicks;
  uint64_t seq;
};

// Deterministic pushes: 60 batches of 300 Zipf-ish keys over 2,000.
std::vector<Step> Workload(uint32_t pull_dim) {
  std::mt19937 rng(11);
  std::vector<Step> steps;
  for (uint64_t s = 1; s <= 60; ++s) {
    Step st;
    st.seq = s;
    for (int i = 0; i < 300; ++i) {
      const uint64_t r = rng() % 2000;
      st.keys.push_back((r * r) % 2000);  // skewed towards small keys
      for (uint32_t j = 0; j < pull_dim; ++j) {
        st.grads.push_back(float(int(rng() % 200) - 100) / 100.0f);
      }
      st.shows.push_back(1);
      st.clicks.push_back(rng() % 4 == 0);
    }
    steps.push_back(std::move(st));
  }
  return steps;
}

void Apply(SparseTable& t, const Step& s, uint64_t writer = 5) {
  PushBatch b{s.keys,          s.grads.data(), s.shows.data(),
              s.clicks.data(), writer,         s.seq};
  ASSERT_TRUE(t.Push(b).ok());
}

std::vector<float> PullAll(SparseTable& t) {
  std::vector<uint64_t> keys(2000);
  for (uint64_t k = 0; k < keys.size(); ++k) keys[k] = k;
  std::vector<float> out(keys.size() * t.pull_dim());
  EXPECT_TRUE(t.Pull(keys, false, out.data()).ok());
  return out;
}

TableOptions CaseOptions(const std::string& which, const std::string& dir) {
  TableOptions o = Options(dir);
  if (which == "unflushed") {
    o.flush_interval_ms = 1000000;  // nothing reaches RocksDB before death
  } else {
    o.flush_interval_ms = 1;   // shards flushed at different LSNs
    o.redo_log_bytes = 20000;  // memtable flushes and log deletions too
    o.hot_tier_bytes = 1;      // and eviction under backpressure, and
                               // write-back rounds of one file per shard
  }
  if (which == "partial_memtable") o.write_back = WriteBack::kMemtable;
  return o;
}

// The child (this binary re-executed, see ChildHook): opens the table,
// applies every step, then dies without closing it (as a SIGKILL would: no
// flush, no destructor). A fresh process because RocksDB's thread pools do
// not survive fork().
int RunChild(const std::string& which, const std::string& dir) {
  auto t = NewTable(CaseOptions(which, dir));
  if (!t.ok()) return 3;
  for (const Step& s : Workload((*t)->pull_dim())) {
    PushBatch b{s.keys, s.grads.data(), s.shows.data(), s.clicks.data(),
                5,      s.seq};
    if (!(*t)->Push(b).ok()) return 4;
    // Let the flusher write some shards mid-way.
    if (s.seq % 20 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
  }
  std::fflush(stdout);
  _exit(0);
}

struct ChildHook {
  ChildHook() {
    const char* which = std::getenv("REDO_TEST_CHILD");
    const char* dir = std::getenv("REDO_TEST_DIR");
    if (which != nullptr && dir != nullptr) _exit(RunChild(which, dir));
  }
} child_hook;

void PushThenDie(const std::string& which, const std::string& dir) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("REDO_TEST_CHILD", which.c_str(), 1);
    setenv("REDO_TEST_DIR", dir.c_str(), 1);
    execl("/proc/self/exe", "redo_table_test", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

void ExpectReplayEqualsLive(const std::string& which) {
  const TableOptions o = CaseOptions(which, FreshDir(which));
  auto mem = NewMemoryTable(o);
  const std::vector<Step> steps = Workload(mem->pull_dim());
  for (const Step& s : steps) Apply(*mem, s);
  PushThenDie(which, o.data_dir);
  EXPECT_GT(std::distance(std::filesystem::directory_iterator(
                              o.data_dir + "/redo-" + o.table_name),
                          std::filesystem::directory_iterator()),
            0);
  auto t = NewTable(o);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(PullAll(**t), PullAll(*mem));
  // Replaying any acknowledged push changes nothing.
  for (const Step& s : {steps[0], steps[30], steps.back()}) Apply(**t, s);
  EXPECT_EQ(PullAll(**t), PullAll(*mem));
  EXPECT_EQ((*t)->Stats().duplicate_keys, 900u);
}

TEST(RedoTableTest, ReplayOfAnUnflushedLogEqualsTheLiveTable) {
  ExpectReplayEqualsLive("unflushed");
}

TEST(RedoTableTest, ReplayOnTopOfPartialFlushesEqualsTheLiveTable) {
  ExpectReplayEqualsLive("partial");
}

TEST(RedoTableTest, ReplayOnTopOfPartialMemtableFlushesEqualsTheLiveTable) {
  ExpectReplayEqualsLive("partial_memtable");
}

// A write-back file holds cuts, sequences and rows given in any order.
TEST(RedoTableTest, IngestedRoundReadsBackWhole) {
  TableOptions o = Options(FreshDir("round"));
  auto store = RowStore::Open(o);
  ASSERT_TRUE(store.ok()) << store.status();
  const float a[2] = {1.5f, -2}, b[3] = {7, 8, 9};
  RowStore::SstRound round;
  round.lsns = {{3, 40}, {1, 41}};
  round.sequences = {{3, 9, 100}, {1, 9, 99}, {1, 2, 5}};
  round.rows = {{900, b, 3}, {17, a, 2}};
  ASSERT_TRUE((*store)->IngestRound(&round).ok());
  std::vector<std::string> values;
  const std::vector<uint64_t> keys = {17, 18, 900};
  ASSERT_TRUE((*store)->MultiGet(keys, &values).ok());
  EXPECT_EQ(values[0], std::string(reinterpret_cast<const char*>(a), 8));
  EXPECT_TRUE(values[1].empty());
  EXPECT_EQ(values[2], std::string(reinterpret_cast<const char*>(b), 12));
  std::vector<std::pair<uint32_t, uint64_t>> lsns;
  ASSERT_TRUE((*store)
                  ->ForEachShardLsn(
                      [&](uint32_t s, uint64_t l) { lsns.emplace_back(s, l); })
                  .ok());
  EXPECT_EQ(lsns,
            (std::vector<std::pair<uint32_t, uint64_t>>{{1, 41}, {3, 40}}));
  std::vector<std::vector<uint64_t>> seqs;
  ASSERT_TRUE((*store)
                  ->ForEachSequence([&](uint32_t s, uint64_t w, uint64_t q) {
                    seqs.push_back({s, w, q});
                  })
                  .ok());
  EXPECT_EQ(seqs, (std::vector<std::vector<uint64_t>>{
                      {1, 2, 5}, {1, 9, 99}, {3, 9, 100}}));
  // Nothing of it is left in the staging directory.
  EXPECT_TRUE(std::filesystem::is_empty(o.data_dir + "/ingest-table0"));
}

TEST(RedoTableTest, ReopeningInRocksDbWalModeReplaysTheRedoLogFirst) {
  TableOptions o = CaseOptions("unflushed", FreshDir("switch"));
  auto mem = NewMemoryTable(o);
  for (const Step& s : Workload(mem->pull_dim())) Apply(*mem, s);
  PushThenDie("unflushed", o.data_dir);
  o.durability_log = DurabilityLog::kRocksDbWal;
  auto t = NewTable(o);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(PullAll(**t), PullAll(*mem));
  EXPECT_FALSE(std::filesystem::exists(o.data_dir + "/redo-table0"));
}

TEST(RedoTableTest, SnapshotIncludesDirtyRows) {
  const std::string dir = FreshDir("snap");
  TableOptions o = Options(dir);
  o.flush_interval_ms = 1000000;
  auto mem = NewMemoryTable(o);
  const std::vector<Step> steps = Workload(mem->pull_dim());
  const std::string snap = dir + "_snapshot", delta = dir + "_delta";
  std::filesystem::remove_all(snap);
  {
    auto t = NewTable(o);
    ASSERT_TRUE(t.ok()) << t.status();
    for (int i = 0; i < 30; ++i) Apply(**t, steps[i]), Apply(*mem, steps[i]);
    ASSERT_GT((*t)->Stats().dirty_rows, 0u);
    ASSERT_TRUE((*t)->Snapshot(snap).ok());
    EXPECT_EQ((*t)->Stats().dirty_rows, 0u);
    for (int i = 30; i < 60; ++i) Apply(**t, steps[i]), Apply(*mem, steps[i]);
    ASSERT_TRUE((*t)->DeltaSnapshot(delta).ok());
  }
  const std::string restored = dir + "_restored";
  ASSERT_TRUE(RestoreSnapshot(snap, restored).ok());
  TableOptions r = o;
  r.data_dir = restored;
  auto t = NewTable(r);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE((*t)->ApplyDelta(delta).ok());
  EXPECT_EQ(PullAll(**t), PullAll(*mem));
}

TEST(RedoTableTest, DirtyRowsStayWithinTheHotTierBudget) {
  TableOptions o = Options(FreshDir("budget"));
  o.hot_tier_bytes = 4 << 20;     // rows get half: ~30k of the 100k pushed
  o.flush_interval_ms = 1000000;  // only backpressure flushes
  auto t = NewTable(o);
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<float> grads(2000 * (*t)->pull_dim(), 0.1f), ones(2000, 1);
  uint64_t peak = 0;
  for (uint64_t seq = 1; seq <= 50; ++seq) {
    std::vector<uint64_t> keys(2000);
    for (uint64_t i = 0; i < keys.size(); ++i) keys[i] = seq * 2000 + i;
    PushBatch b{keys, grads.data(), ones.data(), ones.data(), 1, seq};
    ASSERT_TRUE((*t)->Push(b).ok());
    peak = std::max(peak, (*t)->Stats().memory_bytes);
  }
  const TableStats s = (*t)->Stats();
  EXPECT_GT(s.evictions, 50000u);
  EXPECT_GT(s.dirty_rows, 0u);
  EXPECT_LE(peak, o.hot_tier_bytes / 2 * 5 / 4) << "hot tier past budget";
}

// Counter tables for the concurrency tests: every push adds 1 to each of its
// keys (SGD, rate 1, gradient -1), and the flusher and log truncation run
// all the time.
TableOptions CounterOptions(const std::string& name) {
  TableOptions o = Options(FreshDir(name));
  o.embedding_dim = 0;
  o.rule = OptimizerRule::kSgd;
  o.learning_rate = 1;
  o.flush_interval_ms = 1;
  o.redo_log_bytes = 8192;
  return o;
}

// `rounds` pushes of `keys` by `writer` (sequences 1..rounds), each followed
// by a training pull; with retry_every > 0 every retry_every-th push is sent
// twice, and the retry must apply nothing.
void PushAndPull(SparseTable& t, const std::vector<uint64_t>& keys,
                 uint64_t writer, uint64_t rounds, uint64_t retry_every) {
  std::vector<float> grads(keys.size(), -1), ones(keys.size(), 1),
      out(keys.size());
  for (uint64_t r = 1; r <= rounds; ++r) {
    PushBatch b{keys, grads.data(), ones.data(), ones.data(), writer, r};
    EXPECT_TRUE(t.Push(b).ok());
    EXPECT_TRUE(t.Pull(keys, true, out.data()).ok());
    if (retry_every > 0 && r % retry_every == 0) {
      EXPECT_EQ(t.Push(b)->applied_keys, 0u);
    }
  }
}

void ExpectCounts(SparseTable& t, const std::vector<uint64_t>& keys,
                  float want) {
  std::vector<float> w(keys.size());
  ASSERT_TRUE(t.Pull(keys, false, w.data()).ok());
  for (float v : w) EXPECT_EQ(v, want);
}

// Run under ThreadSanitizer by `make sanitize`.
TEST(RedoTableTest, ConcurrentPushesPullsAndFlushesAllLand) {
  TableOptions o = CounterOptions("threads");
  o.hot_tier_bytes = 1;
  constexpr int kThreads = 4, kRounds = 60;
  std::vector<uint64_t> keys(200);
  for (uint64_t k = 0; k < keys.size(); ++k) keys[k] = k;
  {
    auto t = NewTable(o);
    ASSERT_TRUE(t.ok()) << t.status();
    std::vector<std::thread> threads;
    for (int th = 0; th < kThreads; ++th) {
      threads.emplace_back(
          [&, th] { PushAndPull(**t, keys, th + 1, kRounds, 10); });
    }
    for (auto& th : threads) th.join();
    ExpectCounts(**t, keys, kThreads * kRounds);
  }
  auto t = NewTable(o);  // and after a clean reopen
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectCounts(**t, keys, kThreads * kRounds);
}

// Whole-table operations (Flush, Snapshot: every shard lock, the flush and
// the log truncation) between concurrent pushes and pulls: every push lands
// once, and nothing is lost across a reopen.
TEST(RedoTableTest, FlushesAndSnapshotsDuringPushesLoseNothing) {
  const TableOptions o = CounterOptions("threads_admin");
  constexpr int kThreads = 3, kRounds = 80;
  std::vector<uint64_t> keys(300);
  for (uint64_t k = 0; k < keys.size(); ++k) keys[k] = k * 7;
  {
    auto t = NewTable(o);
    ASSERT_TRUE(t.ok()) << t.status();
    std::atomic<int> running{kThreads};
    std::vector<std::thread> threads;
    for (int th = 0; th < kThreads; ++th) {
      threads.emplace_back([&, th] {
        PushAndPull(**t, keys, th + 1, kRounds, 0);
        --running;
      });
    }
    int snapshots = 0;
    while (running > 0) {
      EXPECT_TRUE((*t)->Flush().ok());
      const std::string dir = o.data_dir + "-snap" + std::to_string(snapshots);
      EXPECT_TRUE((*t)->Snapshot(dir).ok());
      ++snapshots;
    }
    for (auto& th : threads) th.join();
    EXPECT_GT(snapshots, 0);
    ExpectCounts(**t, keys, kThreads * kRounds);
  }
  auto t = NewTable(o);
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectCounts(**t, keys, kThreads * kRounds);
}

}  // namespace
}  // namespace sampan
