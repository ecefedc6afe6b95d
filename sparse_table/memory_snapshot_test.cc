// Memory backend snapshots: a full snapshot restored and the deltas taken
// after it applied in order equal the live table; out-of-order and corrupt
// files are refused and change nothing.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

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
  absl::StatusOr<uint64_t> shrunk = live.Shrink();
  EXPECT_TRUE(shrunk.ok());
  EXPECT_GT(*shrunk, 0u);
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

}  // namespace
}  // namespace sampan
