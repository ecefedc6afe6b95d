#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "common/thread_priority.h"
#include "gtest/gtest.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/rocks_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

// Every test runs once per durability log (the fixture sets it).
DurabilityLog durability_log = DurabilityLog::kRedoLog;

class RocksDbTableTest : public ::testing::TestWithParam<DurabilityLog> {
 protected:
  void SetUp() override { durability_log = GetParam(); }
};

TableOptions Options(const std::string& dir, OptimizerRule rule, uint32_t dim) {
  TableOptions o;
  o.durability_log = durability_log;
  o.backend = Backend::kRocksDb;
  o.data_dir = dir;
  o.num_shards = 4;
  o.embedding_dim = dim;
  o.rule = rule;
  o.learning_rate = 0.5f;
  o.initial_accumulator = 1.0f;
  o.init_range = 0.1f;
  return o;
}

std::unique_ptr<SparseTable> Open(const TableOptions& o) {
  auto t = NewTable(o);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

// Pushes `grads` (pull_dim() per key) with show 1, click 0.
absl::StatusOr<PushResult> PushGrads(SparseTable& t,
                                     const std::vector<uint64_t>& keys,
                                     const std::vector<float>& grads,
                                     uint64_t writer, uint64_t seq) {
  std::vector<float> shows(keys.size(), 1), clicks(keys.size(), 0);
  PushBatch b;
  b.keys = keys;
  b.grads = grads.data();
  b.shows = shows.data();
  b.clicks = clicks.data();
  b.writer_id = writer;
  b.sequence = seq;
  return t.Push(b);
}

// Pushes grads of `grad` (-1) on every entry.
absl::StatusOr<PushResult> PushOnes(SparseTable& t,
                                    const std::vector<uint64_t>& keys,
                                    uint64_t writer = 0, uint64_t seq = 0,
                                    float grad = -1.0f) {
  return PushGrads(t, keys,
                   std::vector<float>(keys.size() * t.pull_dim(), grad), writer,
                   seq);
}

std::vector<float> PullAll(SparseTable& t, const std::vector<uint64_t>& keys,
                           bool training = false) {
  std::vector<float> out(keys.size() * t.pull_dim());
  EXPECT_TRUE(t.Pull(keys, training, out.data()).ok());
  return out;
}

std::vector<uint64_t> Range(uint64_t from, uint64_t n) {
  std::vector<uint64_t> keys(n);
  for (uint64_t i = 0; i < n; ++i) keys[i] = from + i;
  return keys;
}

TEST_P(RocksDbTableTest, CleanReopenServesIdenticalRows) {
  const std::string dir = FreshDir("reopen");
  const auto keys = Range(100, 300);
  std::vector<float> before;
  {
    auto t = Open(Options(dir, OptimizerRule::kAdagrad, 4));
    ASSERT_TRUE(PushOnes(*t, keys, 1, 1).ok());
    ASSERT_TRUE(PushOnes(*t, Range(100, 50), 1, 2).ok());
    before = PullAll(*t, keys);
    EXPECT_NE(before[0], 0.0f);
  }
  auto t = Open(Options(dir, OptimizerRule::kAdagrad, 4));
  EXPECT_EQ(PullAll(*t, keys), before);
  // The writer's sequences came back too: a replay changes nothing.
  auto replay = PushOnes(*t, keys, 1, 2);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->applied_keys, 0u);
  EXPECT_EQ(replay->duplicate_keys, keys.size());
  EXPECT_EQ(PullAll(*t, keys), before);
  EXPECT_EQ(PushOnes(*t, keys, 1, 3)->applied_keys, keys.size());
}

TEST_P(RocksDbTableTest, MatchesMemoryBackendWithSmallHotTier) {
  const std::string dir = FreshDir("match");
  for (OptimizerRule rule : {OptimizerRule::kSgd, OptimizerRule::kAdagrad,
                             OptimizerRule::kAdam, OptimizerRule::kFtrl}) {
    std::filesystem::remove_all(dir);
    TableOptions o = Options(dir, rule, 3);
    o.hot_tier_bytes = 1;        // the floor: 16 rows per shard
    o.embedx_threshold = 0.35f;  // v appears on a key's 4th push
    auto rocks = Open(o);
    auto mem = NewMemoryTable(o);
    std::mt19937 rng(7);
    std::uniform_int_distribution<uint64_t> key(0, 999);
    for (int round = 0; round < 30; ++round) {
      std::vector<uint64_t> keys(200);
      for (auto& k : keys) k = key(rng);
      const float g = (round % 3) - 1.0f;
      ASSERT_TRUE(PushOnes(*rocks, keys, 0, 0, g).ok());
      ASSERT_TRUE(PushOnes(*mem, keys, 0, 0, g).ok());
      if (round == 15) {  // reopen mid-way: nothing is lost
        rocks.reset();
        rocks = Open(o);
      }
    }
    const auto all = Range(0, 1000);
    EXPECT_EQ(PullAll(*rocks, all), PullAll(*mem, all));
    const TableStats s = rocks->Stats();
    EXPECT_LE(s.hot_rows, 4u * 16u);
    EXPECT_GT(s.evictions, 0u);
  }
}

// The memory backend applies pushes in place, RocksDB's through a scratch
// copy: both must count and apply duplicates, admission and replays alike.
TEST_P(RocksDbTableTest, MatchesMemoryBackendWithAdmissionAndReplays) {
  TableOptions o = Options(FreshDir("match_admit"), OptimizerRule::kAdagrad, 2);
  o.admit_after_pushes = 3;
  auto rocks = Open(o);
  auto mem = NewMemoryTable(o);
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint64_t> key(0, 299);
  uint64_t seq = 0;
  for (int round = 0; round < 40; ++round) {
    std::vector<uint64_t> keys(120);
    for (auto& k : keys) k = key(rng);  // duplicates within a push too
    // Every fourth round reuses the previous sequence, as a retried push
    // does: every shard it touches must refuse it.
    const uint64_t s = round % 4 == 3 ? seq : ++seq;
    auto r = PushOnes(*rocks, keys, 9, s, round % 2 ? 1.0f : -0.5f);
    auto m = PushOnes(*mem, keys, 9, s, round % 2 ? 1.0f : -0.5f);
    ASSERT_TRUE(r.ok() && m.ok());
    EXPECT_EQ(m->applied_keys, r->applied_keys) << "round " << round;
    EXPECT_EQ(m->unadmitted_keys, r->unadmitted_keys) << "round " << round;
    EXPECT_EQ(m->duplicate_keys, r->duplicate_keys) << "round " << round;
  }
  const auto all = Range(0, 300);
  EXPECT_EQ(PullAll(*rocks, all), PullAll(*mem, all));
  EXPECT_GT(mem->Stats().unadmitted_keys, 0u);
  EXPECT_GT(mem->Stats().duplicate_keys, 0u);
}

// A push of more keys than one run of shards holds is applied run by run,
// each its own log record: still exactly the memory backend's result, each
// shard's sequence once (a retried large push is refused everywhere, also
// after recovery replays the runs), and a non-finite gradient anywhere
// rejects the whole push before any run applies.
TEST_P(RocksDbTableTest, LargePushesApplyInRunsOfShardsExactlyOnce) {
  TableOptions o = Options(FreshDir("large"), OptimizerRule::kAdagrad, 3);
  o.num_shards = 16;
  o.non_finite = NonFinitePolicy::kRejectBatch;
  auto rocks = Open(o);
  auto mem = NewMemoryTable(o);
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint64_t> key(0, 29999);
  std::vector<uint64_t> keys(20000);  // ~5x a run; duplicates too
  for (uint64_t seq = 1; seq <= 6; ++seq) {
    for (auto& k : keys) k = key(rng);
    const float g = seq % 2 ? 1.0f : -0.5f;
    auto r = PushOnes(*rocks, keys, 5, seq, g);
    auto m = PushOnes(*mem, keys, 5, seq, g);
    ASSERT_TRUE(r.ok() && m.ok()) << r.status();
    EXPECT_EQ(r->applied_keys, keys.size());
    EXPECT_EQ(m->applied_keys, r->applied_keys);
    if (seq == 3) {  // the ack was lost: the retry changes no shard
      auto retry = PushOnes(*rocks, keys, 5, seq, g);
      ASSERT_TRUE(retry.ok());
      EXPECT_EQ(retry->applied_keys, 0u);
      EXPECT_EQ(retry->duplicate_keys, keys.size());
    }
  }
  const auto all = Range(0, 30000);
  const std::vector<float> before = PullAll(*mem, all);
  EXPECT_EQ(PullAll(*rocks, all), before);

  std::vector<float> grads(keys.size() * rocks->pull_dim(), 1.0f);
  grads.back() = std::nanf("");  // in the last run of shards
  EXPECT_EQ(PushGrads(*rocks, keys, grads, 5, 7).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PullAll(*rocks, all), before);

  rocks.reset();  // recovery replays every run's record
  rocks = Open(o);
  EXPECT_EQ(PullAll(*rocks, all), before);
  auto replay = PushOnes(*rocks, keys, 5, 6);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->duplicate_keys, keys.size());
  EXPECT_EQ(PullAll(*rocks, all), before);
}

// The gRPC-thread pull: answers hot keys exactly as Pull does, and refuses
// (creating nothing) as soon as one key would be read from RocksDB.
TEST_P(RocksDbTableTest, PullIfInMemoryAnswersHotKeysOnly) {
  TableOptions o = Options(FreshDir("in_memory"), OptimizerRule::kAdagrad, 3);
  auto t = Open(o);
  const auto hot = Range(0, 50);
  ASSERT_TRUE(PushOnes(*t, hot).ok());
  std::vector<float> out(hot.size() * t->pull_dim(), -7.0f);
  ASSERT_TRUE(t->PullIfInMemory(hot, true, out.data()));
  EXPECT_EQ(out, PullAll(*t, hot));
  const uint64_t rows = t->Stats().hot_rows;
  std::vector<uint64_t> with_cold = hot;
  with_cold.push_back(1000);  // never pushed: RocksDB would be asked
  std::vector<float> out2(with_cold.size() * t->pull_dim());
  EXPECT_FALSE(t->PullIfInMemory(with_cold, true, out2.data()));
  EXPECT_EQ(t->Stats().hot_rows, rows);
  auto mem = NewMemoryTable(o);  // a memory table always answers
  EXPECT_TRUE(mem->PullIfInMemory(with_cold, true, out2.data()));
}

// True once every key of `keys` is in the hot tier, within `wait`.
bool HotWithin(SparseTable& t, const std::vector<uint64_t>& keys,
               absl::Duration wait) {
  std::vector<float> out(keys.size() * t.pull_dim());
  const absl::Time until = absl::Now() + wait;
  do {
    if (t.PullIfInMemory(keys, false, out.data())) return true;
    absl::SleepFor(absl::Milliseconds(20));
  } while (absl::Now() < until);
  return false;
}

// A reopened table reads the rows its hot tier held back into it (hot_keys.cc),
// without a pull asking; without the saved list, or with a corrupt one, it
// warms nothing and still serves.
TEST_P(RocksDbTableTest, AReopenedTableWarmsItsHotTier) {
  const std::string dir = FreshDir("warm_up");
  TableOptions o = Options(dir, OptimizerRule::kAdagrad, 3);
  const auto keys = Range(0, 3000);
  std::vector<float> before;
  {
    auto t = Open(o);
    ASSERT_TRUE(PushOnes(*t, keys).ok());
    before = PullAll(*t, keys);
  }  // a clean close saves the hot keys
  const std::string list = dir + "/" + o.table_name + ".hotkeys";
  ASSERT_TRUE(std::filesystem::exists(list));
  {
    auto t = Open(o);
    EXPECT_TRUE(HotWithin(*t, keys, absl::Seconds(20)));
    std::vector<float> out(keys.size() * t->pull_dim());
    ASSERT_TRUE(t->PullIfInMemory(keys, false, out.data()));
    EXPECT_EQ(out, before);
  }
  // Without the list: nothing is read until pulls ask.
  std::filesystem::remove(list);
  {
    auto t = Open(o);
    EXPECT_FALSE(HotWithin(*t, keys, absl::Milliseconds(500)));
    EXPECT_EQ(PullAll(*t, keys), before);
  }
  // A corrupt list: logged, nothing warmed, the table serves.
  ASSERT_TRUE(std::filesystem::exists(list));
  std::filesystem::resize_file(list, std::filesystem::file_size(list) - 3);
  {
    auto t = Open(o);
    EXPECT_FALSE(HotWithin(*t, keys, absl::Milliseconds(500)));
    EXPECT_EQ(PullAll(*t, keys), before);
  }
}

TEST_P(RocksDbTableTest, ShrinkDeletesDurably) {
  const std::string dir = FreshDir("shrink");
  TableOptions o = Options(dir, OptimizerRule::kSgd, 2);
  o.delete_threshold = 0.15f;  // nonclk 0.1: show >= 2 survives one decay
  o.show_decay_rate = 0.9f;
  {
    auto t = Open(o);
    ASSERT_TRUE(PushOnes(*t, Range(0, 100)).ok());
    ASSERT_TRUE(PushOnes(*t, Range(0, 10)).ok());  // keys 0..9: show 2
    auto shrunk = t->Shrink();
    ASSERT_TRUE(shrunk.ok());
    EXPECT_EQ(shrunk->deleted_rows, 90u);
    EXPECT_EQ(shrunk->rows, 10u);
    EXPECT_EQ(t->Stats().shrunk_rows, 90u);
  }
  auto t = Open(o);
  const auto out = PullAll(*t, Range(0, 100));
  for (int k = 0; k < 100; ++k) {
    EXPECT_EQ(out[k * 3] != 0, k < 10) << k;  // w is 1.0 for survivors
  }
}

TEST_P(RocksDbTableTest, SnapshotRestoreEqualsTableAtSnapshot) {
  const std::string dir = FreshDir("snap"), snap = FreshDir("snap_copy");
  const TableOptions o = Options(dir, OptimizerRule::kAdagrad, 4);
  const auto keys = Range(0, 500);
  std::vector<float> at_snapshot;
  {
    auto t = Open(o);
    ASSERT_TRUE(PushOnes(*t, keys, 3, 1).ok());
    at_snapshot = PullAll(*t, keys);
    ASSERT_TRUE(t->Snapshot(snap).ok());
    ASSERT_TRUE(PushOnes(*t, keys, 3, 2).ok());
    EXPECT_NE(PullAll(*t, keys), at_snapshot);
  }
  ASSERT_TRUE(RestoreSnapshot(snap, dir).ok());
  auto t = Open(o);
  EXPECT_EQ(PullAll(*t, keys), at_snapshot);
  // Sequence 2 was applied after the snapshot: after restore it applies.
  EXPECT_EQ(PushOnes(*t, keys, 3, 2)->applied_keys, keys.size());
}

// What a snapshot directory holds: each file's name and size.
std::vector<std::pair<std::string, uintmax_t>> Listing(const std::string& d) {
  std::vector<std::pair<std::string, uintmax_t>> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(d)) {
    out.emplace_back(e.path().string(),
                     e.is_regular_file() ? e.file_size() : 0);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_P(RocksDbTableTest, SnapshotKeysListsTheSnapshotsRowsAndWritesNothing) {
  const std::string dir = FreshDir("keys"), snap = FreshDir("keys_snap");
  const TableOptions o = Options(dir, OptimizerRule::kAdagrad, 4);
  auto t = Open(o);
  ASSERT_TRUE(PushOnes(*t, Range(1000, 300), 3, 1).ok());
  ASSERT_TRUE(t->Snapshot(snap).ok());
  ASSERT_TRUE(PushOnes(*t, Range(5000, 50), 3, 2).ok());  // not in it
  const auto before = Listing(snap);
  std::vector<uint64_t> want;
  for (uint64_t k = 1000; k < 1300; ++k) {
    if (k % 3 == 1) want.push_back(k);
  }
  auto keys = SnapshotKeys(snap, o.table_name, 1, 3);
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_EQ(*keys, want);
  EXPECT_TRUE(SnapshotKeys(snap, "no-such-table", 0, 1)->empty());
  EXPECT_EQ(Listing(snap), before);  // no LOG, no new MANIFEST
  const auto missing = SnapshotKeys(snap + "-missing", o.table_name, 0, 1);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(snap + "-missing"),
            std::string::npos)
      << missing.status();
}

TEST_P(RocksDbTableTest, FullPlusDeltasRestoreEqualsLiveTable) {
  const std::string dir = FreshDir("delta"), copy = FreshDir("delta_copy"),
                    full = FreshDir("delta_full"), d1 = FreshDir("d1"),
                    d2 = FreshDir("d2");
  TableOptions o = Options(dir, OptimizerRule::kFtrl, 3);
  o.embedx_threshold = 0.15f;  // some rows short, some with v
  o.delete_threshold = 0.15f;
  o.show_decay_rate = 0.9f;
  const auto all = Range(0, 400);
  std::vector<float> live;
  {
    auto t = Open(o);
    ASSERT_TRUE(PushOnes(*t, Range(0, 200), 5, 1).ok());
    ASSERT_TRUE(t->Snapshot(full).ok());
    ASSERT_TRUE(PushOnes(*t, Range(100, 200), 5, 2).ok());  // 100..199 x2
    auto shrunk = t->Shrink();  // keys 0..99 and 200..299: show 1 -> gone
    ASSERT_TRUE(shrunk.ok());
    EXPECT_EQ(shrunk->deleted_rows, 200u);
    EXPECT_EQ(shrunk->rows, 100u);
    ASSERT_TRUE(t->DeltaSnapshot(d1).ok());
    ASSERT_TRUE(PushOnes(*t, Range(250, 150), 5, 3).ok());
    ASSERT_TRUE(t->DeltaSnapshot(d2).ok());
    live = PullAll(*t, all);
  }
  ASSERT_TRUE(RestoreSnapshot(full, copy).ok());
  o.data_dir = copy;
  auto t = Open(o);
  EXPECT_EQ(t->ApplyDelta(d2).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(t->ApplyDelta(d1).ok());
  ASSERT_TRUE(t->ApplyDelta(d2).ok());
  EXPECT_EQ(PullAll(*t, all), live);
  for (int k : {0, 150, 260, 399}) {
    EXPECT_EQ(live[k * 4] != 0, k >= 100 && (k < 200 || k >= 250)) << k;
  }
  // The deltas carried the writer's sequences too.
  EXPECT_EQ(PushOnes(*t, all, 5, 3)->applied_keys, 0u);
}

TEST_P(RocksDbTableTest, BulkLoadServesTheLoadedValues) {
  const std::string dir = FreshDir("bulk");
  const TableOptions o = Options(dir, OptimizerRule::kAdagrad, 2);
  const auto keys = Range(1000, 300);
  std::vector<float> values(keys.size() * 3);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.001f * i;
  {
    auto t = Open(o);
    ASSERT_TRUE(PushOnes(*t, Range(1000, 10)).ok());  // replaced below
    ASSERT_TRUE(t->BulkLoad(keys, values.data()).ok());
    EXPECT_EQ(PullAll(*t, keys), values);
  }
  auto t = Open(o);
  EXPECT_EQ(PullAll(*t, keys), values);
  // Fresh Adagrad state: accumulator 1 + 1 = 2 after one push of -1.
  ASSERT_TRUE(PushOnes(*t, {1000}).ok());
  EXPECT_FLOAT_EQ(PullAll(*t, {1000})[0], 0.5f / std::sqrt(2.0f));
}

TEST_P(RocksDbTableTest, TablesInOneDirectoryAreSeparateColumnFamilies) {
  const std::string dir = FreshDir("cfs");
  TableOptions a = Options(dir, OptimizerRule::kSgd, 0), b = a;
  b.table_name = "second";
  auto ta = Open(a), tb = Open(b);
  ASSERT_TRUE(PushOnes(*ta, {1}).ok());
  EXPECT_EQ(PullAll(*ta, {1})[0], 0.5f);
  EXPECT_EQ(PullAll(*tb, {1})[0], 0.0f);
}

TEST_P(RocksDbTableTest, ConcurrentPullsAndPushesAllLand) {
  const std::string dir = FreshDir("threads");
  TableOptions o = Options(dir, OptimizerRule::kSgd, 0);
  o.hot_tier_bytes = 1;
  o.learning_rate = 1.0f;
  auto t = Open(o);
  constexpr int kThreads = 4, kRounds = 100;
  const auto keys = Range(0, 256);
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int r = 1; r <= kRounds; ++r) {
        ASSERT_TRUE(PushOnes(*t, keys, th + 1, r).ok());
        PullAll(*t, keys, true);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (float w : PullAll(*t, keys)) EXPECT_EQ(w, kThreads * kRounds);
}

// The nice values of this process's threads named `name`.
std::vector<int> NiceOfThreads(const std::string& name) {
  std::vector<int> nice;
  for (pid_t tid : ThreadIdsNamed(name)) {
    errno = 0;
    const int n = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
    if (errno == 0) nice.push_back(n);
  }
  return nice;
}

// Compactions must not take the cores from pulls (row_store.cc says why),
// from the first one on; memtable flushes keep their priority.
TEST(RocksDbCompactionTest, RunsAtLowCpuPriority) {
  durability_log = DurabilityLog::kRedoLog;
  auto t = Open(Options(FreshDir("nice"), OptimizerRule::kSgd, 0));
  const auto keys = Range(0, 2000);
  // Overlapping files, each a level higher, until level 0 compacts.
  for (int round = 1; round <= 12; ++round) {
    ASSERT_TRUE(PushOnes(*t, keys, 1, round).ok());
    ASSERT_TRUE(t->Flush().ok());
    const std::vector<int> nice = NiceOfThreads("rocksdb:low");
    ASSERT_FALSE(nice.empty()) << "no rocksdb:low thread";
    for (int n : nice) {
      EXPECT_EQ(n, kRocksDbLowNice) << "compaction thread, round " << round;
    }
  }
  for (int n : NiceOfThreads("rocksdb:high")) EXPECT_EQ(n, 0) << "flush thread";
}

TEST_P(RocksDbTableTest, MissingDataDirIsAnError) {
  TableOptions o = Options("", OptimizerRule::kSgd, 0);
  EXPECT_EQ(NewTable(o).status().code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(
    BothLogs, RocksDbTableTest,
    ::testing::Values(DurabilityLog::kRocksDbWal, DurabilityLog::kRedoLog),
    [](const ::testing::TestParamInfo<DurabilityLog>& info) {
      return info.param == DurabilityLog::kRedoLog ? "RedoLog" : "RocksDbWal";
    });

}  // namespace
}  // namespace sampan
