// Compact row formats through whole tables, for each backend: rows round
// trip through the hot tier, RocksDB, snapshots and deltas word for word
// (the rounding is seeded by the row's history, so every backend computes
// the same words), and a table refuses a database, snapshot or delta of
// another row layout with an error naming it.
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/row_format.h"
#include "gtest/gtest.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

enum class Mode { kMemory, kRedo, kRocksDbWal };

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/rowfmt_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TableOptions Options(RowFormat format, Mode mode, const std::string& dir) {
  TableOptions o;
  o.num_shards = 4;
  o.embedding_dim = 9;  // an odd dim: padding in both packed formats
  o.rule = OptimizerRule::kAdagrad;
  o.learning_rate = 0.2f;
  o.embedding_initial_accumulator = 1;
  o.init_range = 0.05f;
  o.embedx_threshold = 0.25f;  // some rows stay short (no embedding yet)
  o.delete_threshold = 0.5f;   // shrink deletes the rows never clicked
  o.row_format = format;
  o.data_dir = dir;
  if (mode != Mode::kMemory) {
    o.backend = Backend::kRocksDb;
    o.hot_tier_bytes = 16 << 10;  // evicts: rows come back from RocksDB
    o.flush_interval_ms = 5;
    o.durability_log = mode == Mode::kRedo ? DurabilityLog::kRedoLog
                                           : DurabilityLog::kRocksDbWal;
  }
  return o;
}

std::unique_ptr<SparseTable> Open(const TableOptions& o) {
  auto t = NewTable(o);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : nullptr;
}

constexpr uint64_t kKeys = 2000;

void PushSome(SparseTable& t, uint32_t seed, int batches, uint64_t* seq) {
  std::mt19937 rng(seed);
  for (int b = 0; b < batches; ++b) {
    std::vector<uint64_t> keys;
    std::vector<float> grads, shows, clicks;
    for (int i = 0; i < 200; ++i) {
      keys.push_back(rng() % kKeys);
      for (uint32_t j = 0; j < t.pull_dim(); ++j) {
        grads.push_back(float(int(rng() % 200) - 100) / 300.0f);
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

bool SameWords(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class RowFormatTableTest
    : public ::testing::TestWithParam<std::tuple<RowFormat, Mode>> {
 protected:
  RowFormat format() const { return std::get<0>(GetParam()); }
  Mode mode() const { return std::get<1>(GetParam()); }
  std::string Name(const std::string& what) const {
    return what + "_" + RowFormatName(format()) + "_" +
           std::to_string(static_cast<int>(mode()));
  }
};

TEST_P(RowFormatTableTest, EveryBackendComputesTheMemoryTablesWords) {
  auto reference = Open(Options(format(), Mode::kMemory, ""));
  auto t = Open(Options(format(), mode(), FreshDir(Name("same"))));
  uint64_t s1 = 0, s2 = 0;
  PushSome(*reference, 1, 40, &s1);
  PushSome(*t, 1, 40, &s2);
  const std::vector<float> want = PullAll(*reference);
  EXPECT_TRUE(SameWords(PullAll(*t), want));
  if (mode() != Mode::kMemory) {
    EXPECT_GT(t->Stats().evictions, 0u);
  }
  // And in a compact format the values are FP32's within the format's steps.
  if (format() != RowFormat::kFp32) {
    auto fp32 = Open(Options(RowFormat::kFp32, Mode::kMemory, ""));
    uint64_t s3 = 0;
    PushSome(*fp32, 1, 40, &s3);
    const std::vector<float> exact = PullAll(*fp32);
    double worst = 0;
    for (size_t i = 0; i < exact.size(); ++i) {
      worst = std::max(worst, double(std::fabs(exact[i] - want[i])));
    }
    EXPECT_LT(worst, 0.01) << "drifted from FP32 by " << worst;
    EXPECT_GT(worst, 0.0);
  }
}

TEST_P(RowFormatTableTest, SnapshotAndDeltaRestoreTheSameWords) {
  const std::string dir = FreshDir(Name("live")), snaps = FreshDir(Name("s"));
  std::filesystem::create_directories(snaps);
  const TableOptions o = Options(format(), mode(), dir);
  std::vector<float> at_full, at_delta;
  uint64_t seq = 0;
  {
    auto live = Open(o);
    PushSome(*live, 2, 20, &seq);
    at_full = PullAll(*live);
    ASSERT_TRUE(live->Snapshot(snaps + "/full").ok());
    PushSome(*live, 3, 20, &seq);
    ASSERT_TRUE(live->Shrink().ok());
    ASSERT_TRUE(live->DeltaSnapshot(snaps + "/delta1").ok());
    at_delta = PullAll(*live);
    ASSERT_FALSE(SameWords(at_full, at_delta));
  }
  TableOptions r = o;
  if (mode() == Mode::kMemory) {
    r.data_dir = snaps + "/full";
  } else {
    r.data_dir = FreshDir(Name("restored"));
    ASSERT_TRUE(RestoreSnapshot(snaps + "/full", r.data_dir).ok());
  }
  auto restored = Open(r);
  EXPECT_TRUE(SameWords(PullAll(*restored), at_full));
  ASSERT_TRUE(restored->ApplyDelta(snaps + "/delta1").ok());
  EXPECT_TRUE(SameWords(PullAll(*restored), at_delta));
}

TEST_P(RowFormatTableTest, AnotherLayoutIsRefusedByName) {
  const std::string dir = FreshDir(Name("mine")), snaps = FreshDir(Name("o"));
  std::filesystem::create_directories(snaps);
  const RowFormat other =
      format() == RowFormat::kInt8 ? RowFormat::kFp16 : RowFormat::kInt8;
  const TableOptions o = Options(format(), mode(), dir);
  uint64_t seq = 0;
  {
    auto t = Open(o);
    PushSome(*t, 4, 5, &seq);
    ASSERT_TRUE(t->Snapshot(snaps + "/full").ok());
    PushSome(*t, 5, 5, &seq);
    ASSERT_TRUE(t->DeltaSnapshot(snaps + "/delta1").ok());
  }
  const std::string mine = std::string(RowFormatName(format())) + " rows";
  const std::string theirs = std::string(RowFormatName(other)) + " rows";
  // A delta of this layout applied to a table of another.
  TableOptions x = Options(other, mode(), FreshDir(Name("other")));
  {
    auto t = Open(x);
    const absl::Status st = t->ApplyDelta(snaps + "/delta1");
    EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
    EXPECT_NE(st.message().find(snaps + "/delta1 holds " + mine),
              std::string::npos)
        << st;
    EXPECT_NE(st.message().find("configured for " + theirs), std::string::npos)
        << st;
  }
  // The database or full snapshot itself opened with another layout.
  TableOptions y = Options(other, mode(), dir);
  if (mode() == Mode::kMemory) y.data_dir = snaps + "/full";
  const auto t = NewTable(y);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(t.status().message().find(" holds " + mine), std::string::npos)
      << t.status();
  // CheckTableLayout says the same without opening the table.
  const absl::Status checked = CheckTableLayout(y);
  EXPECT_EQ(checked.code(), absl::StatusCode::kFailedPrecondition) << checked;
  EXPECT_NE(checked.message().find(" holds " + mine), std::string::npos)
      << checked;
  // Nothing was changed by the refusal: the right layout still opens.
  TableOptions z = o;
  if (mode() == Mode::kMemory) z.data_dir = snaps + "/full";
  EXPECT_TRUE(CheckTableLayout(z).ok());
  EXPECT_TRUE(NewTable(z).ok());
  // Where there is nothing yet, any layout is fine.
  EXPECT_TRUE(
      CheckTableLayout(Options(other, mode(), FreshDir(Name("none")))).ok());
}

INSTANTIATE_TEST_SUITE_P(
    FormatsAndBackends, RowFormatTableTest,
    ::testing::Combine(
        ::testing::Values(RowFormat::kFp32, RowFormat::kFp16, RowFormat::kInt8),
        ::testing::Values(Mode::kMemory, Mode::kRedo, Mode::kRocksDbWal)));

}  // namespace
}  // namespace sampan
