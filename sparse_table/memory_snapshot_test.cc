// Memory backend snapshots: a full snapshot restored and the deltas taken
// after it applied in order equal the live table; out-of-order and corrupt
// files are refused and change nothing.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/memsnap_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

TableOptions Options(const std::string& data_dir) {
  TableOptions o;
  o.num_shards = 4;
  o.embedding_dim = 3;
  o.rule = OptimizerRule::kAdagrad;
  o.learning_rate = 0.3f;
  o.embedx_threshold = 0.25f;  // some rows stay short (no embedding yet)
  o.delete_threshold = 0.5f;   // shrink deletes the rows never clicked
  o.data_dir = data_dir;
  return o;
}

constexpr uint64_t kKeys = 500;

// Pushes `batches` batches of 100 keys below `key_limit`, writer 7.
void PushSome(SparseTable& t, std::mt19937& rng, uint64_t key_limit,
              int batches, uint64_t* seq) {
  for (int b = 0; b < batches; ++b) {
    std::vector<uint64_t> keys;
    std::vector<float> grads, shows, clicks;
    for (int i = 0; i < 100; ++i) {
      keys.push_back(rng() % key_limit);
      for (uint32_t j = 0; j < t.pull_dim(); ++j) {
        grads.push_back(float(int(rng() % 200) - 100) / 100.0f);
      }
      shows.push_back(1);
      clicks.push_back(rng() % 3 == 0);
    }
    PushBatch batch{keys, grads.data(), shows.data(), clicks.data(), 7, ++*seq};
    ASSERT_TRUE(t.Push(batch).ok());
  }
}

std::vector<float> PullAll(SparseTable& t) {
  std::vector<uint64_t> keys(kKeys);
  for (uint64_t k = 0; k < kKeys; ++k) keys[k] = k;
  std::vector<float> out(kKeys * t.pull_dim());
  EXPECT_TRUE(t.Pull(keys, false, out.data()).ok());
  return out;
}

struct Taken {
  std::string full, delta1, delta2;
  uint64_t seq = 0;
};

// Live table: pushes, full snapshot, pushes + shrink (deletions), delta 1,
// a few pushes to new keys, delta 2.
Taken TakeSnapshots(SparseTable& live, const std::string& dir) {
  Taken t{dir + "/full", dir + "/delta1", dir + "/delta2"};
  std::mt19937 rng(3);
  PushSome(live, rng, 300, 20, &t.seq);
  EXPECT_TRUE(live.Snapshot(t.full).ok());
  PushSome(live, rng, 400, 10, &t.seq);
  absl::StatusOr<ShrinkResult> shrunk = live.Shrink();
  EXPECT_TRUE(shrunk.ok());
  EXPECT_GT(shrunk->deleted_rows, 0u);
  PushSome(live, rng, 300, 3, &t.seq);  // re-creates some deleted keys
  EXPECT_TRUE(live.DeltaSnapshot(t.delta1).ok());
  PushSome(live, rng, kKeys, 2, &t.seq);
  EXPECT_TRUE(live.DeltaSnapshot(t.delta2).ok());
  return t;
}

TEST(MemorySnapshotTest, FullPlusDeltasRestoreEqualsTheLiveTable) {
  const std::string dir = FreshDir("restore");
  auto live = NewMemoryTable(Options(""));
  const Taken t = TakeSnapshots(*live, dir);
  // The second delta holds only the rows of its two pushes.
  EXPECT_LT(std::filesystem::file_size(t.delta2),
            std::filesystem::file_size(t.delta1));

  const std::string data_dir = dir + "/pserver-0";
  ASSERT_TRUE(RestoreSnapshot(t.full, data_dir).ok());
  auto restored = NewTable(Options(data_dir));
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_NE(PullAll(**restored), PullAll(*live));  // only the full so far
  ASSERT_TRUE((*restored)->ApplyDelta(t.delta1).ok());
  ASSERT_TRUE((*restored)->ApplyDelta(t.delta2).ok());
  EXPECT_EQ(PullAll(**restored), PullAll(*live));
  EXPECT_EQ((*restored)->Stats().hot_rows, live->Stats().hot_rows);

  // The writer's sequences came along: a resent push changes nothing.
  std::vector<uint64_t> keys = {1, 2};
  std::vector<float> grads(2 * live->pull_dim(), 1), ones(2, 1);
  PushBatch resent{keys, grads.data(), ones.data(), ones.data(), 7, t.seq};
  ASSERT_TRUE((*restored)->Push(resent).ok());
  EXPECT_EQ((*restored)->Stats().duplicate_keys, 2u);
  EXPECT_EQ(PullAll(**restored), PullAll(*live));
}

TEST(MemorySnapshotTest, OutOfOrderAndCorruptDeltasAreRefused) {
  const std::string dir = FreshDir("refuse");
  auto live = NewMemoryTable(Options(""));
  const Taken t = TakeSnapshots(*live, dir);
  const std::string data_dir = dir + "/pserver-0";
  ASSERT_TRUE(RestoreSnapshot(t.full, data_dir).ok());
  auto restored = NewTable(Options(data_dir));
  ASSERT_TRUE(restored.ok()) << restored.status();
  const std::vector<float> before = PullAll(**restored);

  absl::Status skipped = (*restored)->ApplyDelta(t.delta2);
  EXPECT_EQ(skipped.code(), absl::StatusCode::kFailedPrecondition) << skipped;

  // One flipped byte in a row's floats: the CRC catches it.
  const std::string bad = dir + "/delta1.bad";
  std::filesystem::copy_file(t.delta1, bad);
  {
    std::fstream f(bad, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  absl::Status corrupt = (*restored)->ApplyDelta(bad);
  EXPECT_EQ(corrupt.code(), absl::StatusCode::kDataLoss) << corrupt;
  EXPECT_NE(std::string(corrupt.message()).find("delta1.bad"),
            std::string::npos)
      << corrupt;
  EXPECT_EQ(PullAll(**restored), before);
  // Still at the right epoch: the good delta applies.
  EXPECT_TRUE((*restored)->ApplyDelta(t.delta1).ok());
}

TEST(MemorySnapshotTest, SnapshotIntoAnExistingSnapshotIsRefused) {
  const std::string dir = FreshDir("exists");
  auto live = NewMemoryTable(Options(""));
  ASSERT_TRUE(live->Snapshot(dir + "/full").ok());
  EXPECT_EQ(live->Snapshot(dir + "/full").code(),
            absl::StatusCode::kAlreadyExists);
}

// A push applies one shard at a time, so a snapshot may land inside one
// (some shards with it, some without). Restoring such a snapshot and
// resending every push, as writers do after a restart, must still apply
// each push exactly once on every shard.
TEST(MemorySnapshotTest, SnapshotsInsideConcurrentPushesLoseAndDoubleNothing) {
  const std::string dir = FreshDir("concurrent");
  TableOptions o;
  o.num_shards = 16;
  o.embedding_dim = 0;           // one float per row
  o.rule = OptimizerRule::kSgd;  // w += 1 per push of -1: w counts pushes
  o.learning_rate = 1.0f;
  auto live = NewMemoryTable(o);
  constexpr int kWriters = 2, kPushes = 300, kSnapshots = 5;
  std::vector<uint64_t> keys(512);
  for (uint64_t k = 0; k < keys.size(); ++k) keys[k] = k;
  const std::vector<float> grads(keys.size(), -1.0f), ones(keys.size(), 1.0f);
  auto push = [&](SparseTable& t, uint64_t writer, uint64_t seq) {
    PushBatch b{keys, grads.data(), ones.data(), ones.data(), writer, seq};
    return t.Push(b).status();
  };
  std::vector<std::thread> writers;
  for (int w = 1; w <= kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int seq = 1; seq <= kPushes; ++seq) {
        ASSERT_TRUE(push(*live, w, seq).ok());
      }
    });
  }
  for (int i = 0; i < kSnapshots; ++i) {
    ASSERT_TRUE(live->Snapshot(absl::StrCat(dir, "/full", i)).ok());
  }
  for (std::thread& t : writers) t.join();
  int mixed = 0;  // snapshots that landed inside a push
  for (int i = 0; i < kSnapshots; ++i) {
    const std::string data_dir = absl::StrCat(dir, "/restored", i);
    ASSERT_TRUE(RestoreSnapshot(absl::StrCat(dir, "/full", i), data_dir).ok());
    TableOptions r = o;
    r.data_dir = data_dir;
    auto restored = NewTable(r);
    ASSERT_TRUE(restored.ok()) << restored.status();
    std::vector<float> at(keys.size());
    ASSERT_TRUE((*restored)->Pull(keys, false, at.data()).ok());
    mixed += *std::min_element(at.begin(), at.end()) !=
             *std::max_element(at.begin(), at.end());
    for (int w = 1; w <= kWriters; ++w) {
      for (int seq = 1; seq <= kPushes; ++seq) {
        ASSERT_TRUE(push(**restored, w, seq).ok());
      }
    }
    std::vector<float> out(keys.size());
    ASSERT_TRUE((*restored)->Pull(keys, false, out.data()).ok());
    for (size_t k = 0; k < keys.size(); ++k) {
      ASSERT_EQ(out[k], kWriters * kPushes) << "snapshot " << i << " key " << k;
    }
  }
  // Not asserted (timing decides), but the case this test is for.
  std::printf("%d of %d snapshots landed inside a push\n", mixed, kSnapshots);
}

}  // namespace
}  // namespace sampan
