// Pservers on real loopback ports, driven by a raw stub. One serving two
// RocksDB tables (the sparse rows and an ASYNC job's dense weights):
// requests go to the table they name, the tables' row widths are checked
// separately, an unknown table is refused by name, and a checkpoint holds
// both tables. Shrink on a memory and on a RocksDB table: the rows it
// deletes and keeps, its metrics (promtool-clean), its refusals, and gauges
// that do not wait for it.
#include "pserver/pserver.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/coordinator_epoch.h"
#include "common/file_digest.h"
#include "common/metrics.h"
#include "common/ps_wire.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "pserver/metrics.h"
#include "pserver/pserver_testlib.h"

namespace sampan {
namespace {

constexpr uint32_t kShards = 4;

TableOptions Options(const std::string& dir, uint32_t dim) {
  TableOptions t;
  t.num_shards = kShards;
  t.embedding_dim = dim;
  t.rule = OptimizerRule::kSgd;
  t.learning_rate = 1.0f;
  t.init_range = 0;
  t.backend = Backend::kRocksDb;
  t.data_dir = dir;
  return t;
}

// A pserver serving one table of `t` (null, with a test failure, when the
// table does not open).
std::unique_ptr<ServedPserver> ServeOne(const TableOptions& t,
                                        bool run_inline) {
  auto table = NewTable(t);
  EXPECT_TRUE(table.ok()) << table.status();
  if (!table.ok()) return nullptr;
  std::vector<std::unique_ptr<SparseTable>> tables;
  tables.push_back(std::move(*table));
  PserverOptions o;
  o.num_shards = kShards;
  o.run_inline = run_inline;
  return std::make_unique<ServedPserver>(o, std::move(tables));
}

class TwoTablePserverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = FreshDir("two_tables");
    data_ = root_ + "/pserver-0";
    std::vector<std::unique_ptr<SparseTable>> tables;
    for (const TableOptions& t :
         {Options(data_, 0), Options(data_ + "/table-1", 3)}) {
      auto table = NewTable(t);
      ASSERT_TRUE(table.ok()) << table.status();
      tables.push_back(std::move(*table));
    }
    PserverOptions o;
    o.num_shards = kShards;
    o.checkpoint_dir = [this](uint64_t epoch) {
      return absl::StrCat(root_, "/ckpt-", epoch);
    };
    served_ = std::make_unique<ServedPserver>(o, std::move(tables));
  }

  grpc::Status Push(uint32_t table, uint64_t key,
                    const std::vector<float>& grad, uint64_t sequence) {
    return served_->Push(table, {key}, grad, sequence);
  }

  std::vector<float> Pull(uint32_t table, uint64_t key) {
    return served_->Pull(table, key);
  }

  std::string root_, data_;
  std::unique_ptr<ServedPserver> served_;
};

TEST_F(TwoTablePserverTest, RequestsReachTheTableTheyName) {
  const uint64_t key = 12345;
  ASSERT_TRUE(Push(1, key, {1, 2, 3, 4}, 1).ok());
  EXPECT_EQ(Pull(1, key), (std::vector<float>{-1, -2, -3, -4}));
  EXPECT_EQ(Pull(0, key), (std::vector<float>{0}));  // untouched, 1 wide
  ASSERT_TRUE(Push(0, key, {5}, 1).ok());            // table 0's own sequences
  EXPECT_EQ(Pull(0, key), (std::vector<float>{-5}));
  EXPECT_EQ(Pull(1, key), (std::vector<float>{-1, -2, -3, -4}));

  // Widths are the named table's; replays are per table.
  const grpc::Status narrow = Push(1, key, {1}, 2);
  EXPECT_EQ(narrow.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(narrow.error_message(), "expected 16"))
      << narrow.error_message();
  ASSERT_TRUE(Push(1, key, {1, 2, 3, 4}, 1).ok());  // a replay: not applied
  EXPECT_EQ(Pull(1, key), (std::vector<float>{-1, -2, -3, -4}));

  const grpc::Status unknown = Push(2, key, {1}, 1);
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(unknown.error_message(),
                                "unknown table_id 2 (this job has tables 0-1)"))
      << unknown.error_message();

  ps::StatsRequest stats_req;
  stats_req.set_table_id(1);
  ps::StatsResponse stats;
  grpc::ClientContext ctx;
  ASSERT_TRUE(served_->stub().Stats(&ctx, stats_req, &stats).ok());
  EXPECT_EQ(stats.num_shards(), kShards);
}

// The checkpoint directory is laid out as the data directory (table 1 in
// table-1/), so resume's copy of it brings both tables back.
TEST_F(TwoTablePserverTest, CheckpointHoldsBothTables) {
  const uint64_t key = 777;
  ASSERT_TRUE(Push(0, key, {2}, 1).ok());
  ASSERT_TRUE(Push(1, key, {1, 0, 0, 3}, 1).ok());
  // The pserver writes where its options say for the epoch; the request
  // names no path.
  const std::string ckpt = root_ + "/ckpt-1";
  ps::CheckpointRequest req;
  req.set_epoch(1);
  ps::CheckpointResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status s = served_->stub().Checkpoint(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // The answer lists the snapshot's files as they are on disk (both
  // tables'), for the coordinator's manifest.
  ASSERT_GT(resp.files_size(), 0);
  bool table1 = false;
  for (const ps::SnapshotFile& f : resp.files()) {
    table1 |= absl::StartsWith(f.path(), "table-1/");
    EXPECT_TRUE(VerifyFile(ckpt, {f.path(), f.size(), f.crc32()}).ok())
        << f.path();
  }
  EXPECT_TRUE(table1);
  req.set_epoch(0);
  grpc::ClientContext ctx0;
  EXPECT_EQ(served_->stub().Checkpoint(&ctx0, req, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  // Changes after the checkpoint are not in it.
  ASSERT_TRUE(Push(1, key, {1, 1, 1, 1}, 2).ok());
  served_.reset();

  auto sparse = NewTable(Options(ckpt, 0));
  auto dense = NewTable(Options(ckpt + "/table-1", 3));
  ASSERT_TRUE(sparse.ok()) << sparse.status();
  ASSERT_TRUE(dense.ok()) << dense.status();
  const std::vector<uint64_t> keys = {key};
  std::vector<float> w(1), row(4);
  ASSERT_TRUE((*sparse)->Pull(keys, false, w.data()).ok());
  ASSERT_TRUE((*dense)->Pull(keys, false, row.data()).ok());
  EXPECT_EQ(w, (std::vector<float>{-2}));
  EXPECT_EQ(row, (std::vector<float>{-1, 0, 0, -3}));
}

// Shrink over gRPC on a memory table (served inline, as sampan pserver
// serves one) and on a RocksDB table (on the push pool).
class ShrinkTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    TableOptions t = Options(FreshDir("shrink"), 1);
    t.backend = GetParam();
    // Score = show * nonclk_coeff (0.1) without clicks: after a decay by
    // 0.9, one show scores 0.09 (deleted) and two 0.18 (kept).
    t.show_decay_rate = 0.9f;
    t.delete_threshold = 0.15f;
    served_ = ServeOne(t, GetParam() == Backend::kMemory);
    ASSERT_NE(served_, nullptr);
  }

  std::unique_ptr<ServedPserver> served_;
};

TEST_P(ShrinkTest, DeletesRarelyShownRowsKeepsTheRestAndCountsThem) {
  std::vector<uint64_t> rare, kept;
  for (uint64_t k = 1; k <= 10; ++k) rare.push_back(k);
  for (uint64_t k = 11; k <= 15; ++k) kept.push_back(k);
  // SGD, lr 1: a row is [w, v] = -grad.
  std::vector<float> rare_grads, kept_grads;
  for (size_t i = 0; i < rare.size(); ++i)
    rare_grads.insert(rare_grads.end(), {-1, -0.5f});
  for (size_t i = 0; i < kept.size(); ++i)
    kept_grads.insert(kept_grads.end(), {-2, 0.25f});
  ASSERT_TRUE(served_->Push(0, rare, rare_grads, 1, /*show=*/1).ok());
  ASSERT_TRUE(served_->Push(0, kept, kept_grads, 2, /*show=*/2).ok());
  ASSERT_EQ(served_->Pull(0, rare[0]), (std::vector<float>{1, 0.5f}));

  PserverMetrics* m = PserverMetrics::Get();
  const double shrinks = m->table_shrinks->Value();
  const double evicted = m->table_rows_evicted->Value();
  m->table_rows->Set(-1);  // the shrink refreshes it
  ps::ShrinkResponse resp;
  const grpc::Status s = served_->Shrink(0, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.deleted_rows(), rare.size());
  EXPECT_EQ(resp.rows(), kept.size());
  EXPECT_GE(resp.seconds(), 0);
  for (uint64_t k : rare) {
    EXPECT_EQ(served_->Pull(0, k), (std::vector<float>{0, 0})) << k;
  }
  for (uint64_t k : kept) {
    EXPECT_EQ(served_->Pull(0, k), (std::vector<float>{2, -0.25f})) << k;
  }
  EXPECT_EQ(m->table_shrinks->Value(), shrinks + 1);
  EXPECT_EQ(m->table_rows_evicted->Value(), evicted + rare.size());
  // Exact for a memory table; RocksDB's estimate (TableStats::rows) counts
  // the shrink's tombstones and rewritten rows until compaction.
  EXPECT_NE(m->table_rows->Value(), -1);
  served_->pserver().RefreshGauges();
  if (GetParam() == Backend::kMemory) {
    EXPECT_EQ(m->table_rows->Value(), kept.size());
  }
  EXPECT_EQ(PromtoolComplaints(), "");

  // Decay compounds: two shows score 0.162 after two shrinks (kept), 0.146
  // after three (deleted).
  ASSERT_TRUE(served_->Shrink(0, &resp).ok());
  EXPECT_EQ(resp.deleted_rows(), 0u);
  EXPECT_EQ(resp.rows(), kept.size());
  ASSERT_TRUE(served_->Shrink(0, &resp).ok());
  EXPECT_EQ(resp.deleted_rows(), kept.size());
  EXPECT_EQ(resp.rows(), 0u);
  EXPECT_EQ(served_->Pull(0, kept[0]), (std::vector<float>{0, 0}));
  EXPECT_EQ(m->table_shrinks->Value(), shrinks + 3);
  EXPECT_EQ(m->table_rows_evicted->Value(),
            evicted + rare.size() + kept.size());
}

TEST_P(ShrinkTest, UnknownTableIsRefusedByName) {
  const double shrinks = PserverMetrics::Get()->table_shrinks->Value();
  ps::ShrinkResponse resp;
  const grpc::Status s = served_->Shrink(1, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(
      s.error_message(),
      "Shrink: unknown table_id 1 (this job has table 0 only)"))
      << s.error_message();
  EXPECT_EQ(PserverMetrics::Get()->table_shrinks->Value(), shrinks);
}

INSTANTIATE_TEST_SUITE_P(Backends, ShrinkTest,
                         ::testing::Values(Backend::kMemory, Backend::kRocksDb),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param == Backend::kMemory ? "Memory"
                                                                 : "RocksDb";
                         });

// A shrink writes every row of a RocksDB table, so it is refused, as a push
// is, while the disk is nearly full.
TEST(ShrinkDiskGuardTest, RefusedWhileTheDiskGuardRefusesWrites) {
  const std::string dir = FreshDir("shrink_disk");
  auto table = NewTable(Options(dir, 0));
  ASSERT_TRUE(table.ok()) << table.status();
  std::vector<std::unique_ptr<SparseTable>> tables;
  tables.push_back(std::move(*table));
  PserverOptions o;
  o.num_shards = kShards;
  o.data_dir = dir;
  o.min_free_disk_bytes = UINT64_MAX / 2;
  ServedPserver served(o, std::move(tables));
  const double shrinks = PserverMetrics::Get()->table_shrinks->Value();
  ps::ShrinkResponse resp;
  const grpc::Status s = served.Shrink(0, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "Shrink: pserver 0: disk"))
      << s.error_message();
  EXPECT_EQ(PserverMetrics::Get()->table_shrinks->Value(), shrinks);
}

// Without a checkpoint directory of its own a pserver takes no checkpoint:
// no caller can make it write anywhere.
// An INT8 table's pulls travel compact only when the request asks: 6 words
// a key instead of 17 at dim 16, decoded to what the float32 answer holds.
TEST(CompactPullTest, OnlyWhenAskedAndDecodedToTheFloat32Rows) {
  TableOptions t = Options(FreshDir("compact_pull"), 16);
  t.row_format = RowFormat::kInt8;
  t.init_range = 0.05f;
  std::unique_ptr<ServedPserver> served_one = ServeOne(t, false);
  ASSERT_NE(served_one, nullptr);
  ServedPserver& served = *served_one;
  std::vector<uint64_t> keys;
  std::vector<float> grads;
  for (uint64_t k = 1; k <= 40; ++k) {
    keys.push_back(k * 7919);
    for (int j = 0; j < 17; ++j)
      grads.push_back(0.001f * ((k + j) % 9) - 0.004f);
  }
  ASSERT_TRUE(served.Push(0, keys, grads, 1).ok());
  auto pull = [&](bool compact, ps::PullResponse* resp) {
    ps::PullRequest req;
    for (uint64_t k : keys) req.add_keys(k);
    req.set_compact_values(compact);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    ASSERT_TRUE(served.stub().Pull(&ctx, req, resp).ok());
  };
  ps::PullResponse plain, compact;
  pull(false, &plain);
  pull(true, &compact);
  EXPECT_EQ(plain.values_format(), 0u);
  EXPECT_EQ(plain.values().size(), keys.size() * 17 * sizeof(float));
  EXPECT_EQ(compact.values_format(), 3u);  // INT8
  EXPECT_EQ(compact.values().size(), keys.size() * 6 * sizeof(float));
  EXPECT_EQ(compact.row_dim(), 17u);
  const std::string bytes = compact.SerializeAsString();
  grpc::Slice slice(bytes.data(), bytes.size());
  std::vector<uint32_t> positions(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) positions[i] = i;
  std::vector<float> decoded(keys.size() * 17);
  uint32_t server_dim = 0;
  ASSERT_TRUE(ScatterPullResponse(grpc::ByteBuffer(&slice, 1), positions, 17,
                                  decoded.data(), &server_dim)
                  .ok());
  const float* want = reinterpret_cast<const float*>(plain.values().data());
  for (size_t i = 0; i < decoded.size(); ++i) {
    ASSERT_NEAR(decoded[i], want[i], std::fabs(want[i]) * 1e-6f + 1e-9f) << i;
  }
}

TEST(CheckpointTest, RefusedWithoutItsOwnDirectory) {
  std::vector<std::unique_ptr<SparseTable>> tables;
  tables.push_back(NewMemoryTable(Options("", 0)));
  PserverOptions o;
  o.num_shards = kShards;
  ServedPserver served(o, std::move(tables));
  ps::CheckpointRequest req;
  req.set_epoch(3);
  ps::CheckpointResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status s = served.stub().Checkpoint(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(s.error_message(),
            "Checkpoint: this pserver has no checkpoint directory");
}

// A coordinator that was replaced (common/coordinator_epoch.h) takes no
// snapshot: a Checkpoint carrying an older epoch than one seen before, or
// than the pserver's own coordinator client has seen, is refused.
TEST(CheckpointTest, RefusedFromAReplacedCoordinator) {
  const std::string root = FreshDir("fenced");
  std::vector<std::unique_ptr<SparseTable>> tables;
  tables.push_back(NewMemoryTable(Options("", 0)));
  PserverOptions o;
  o.num_shards = kShards;
  o.checkpoint_dir = [root](uint64_t epoch) {
    return absl::StrCat(root, "/ckpt-", epoch);
  };
  std::atomic<uint64_t> heard{0};  // what its coordinator client saw
  o.newest_coordinator_epoch = [&heard] { return heard.load(); };
  ServedPserver served(o, std::move(tables));
  auto checkpoint = [&](uint64_t epoch, uint64_t coordinator_epoch) {
    ps::CheckpointRequest req;
    req.set_epoch(epoch);
    ps::CheckpointResponse resp;
    grpc::ClientContext ctx;
    ctx.AddMetadata(kCoordinatorEpochKey, absl::StrCat(coordinator_epoch));
    return served.stub().Checkpoint(&ctx, req, &resp);
  };
  EXPECT_TRUE(checkpoint(1, 500).ok());
  const grpc::Status older = checkpoint(2, 400);
  EXPECT_EQ(older.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(older.error_message(),
            "Checkpoint: from coordinator epoch 400, which coordinator "
            "epoch 500 replaced");
  EXPECT_FALSE(std::filesystem::exists(root + "/ckpt-2"));
  heard = 600;  // a newer coordinator answered the pserver's heartbeat
  EXPECT_EQ(checkpoint(3, 500).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(checkpoint(4, 600).ok());
}

// A memory table whose Shrink waits to be released while it holds a lock
// that its Stats takes too, as the real table's shard locks are.
class BlockingShrinkTable : public ForwardingTable {
 public:
  BlockingShrinkTable() : ForwardingTable(NewMemoryTable(Options("", 0))) {}

  absl::Notification entered, release;

  absl::StatusOr<ShrinkResult> Shrink() override {
    std::lock_guard<std::mutex> lock(mu_);
    entered.Notify();
    release.WaitForNotification();
    return inner_->Shrink();
  }
  TableStats Stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return inner_->Stats();
  }

 private:
  mutable std::mutex mu_;
};

// sampan pserver refreshes the gauges on the thread that heartbeats to the
// coordinator: waiting minutes for a RocksDB shrink there would get the
// pserver declared dead.
TEST(ShrinkGaugesTest, RefreshGaugesDoesNotWaitForAShrink) {
  auto owned = std::make_unique<BlockingShrinkTable>();
  BlockingShrinkTable* table = owned.get();
  std::vector<std::unique_ptr<SparseTable>> tables;
  tables.push_back(std::move(owned));
  PserverOptions o;
  o.num_shards = kShards;
  ServedPserver served(o, std::move(tables));
  std::thread shrink([&] {
    ps::ShrinkResponse resp;
    EXPECT_TRUE(served.Shrink(0, &resp).ok());
  });
  table->entered.WaitForNotification();
  absl::Notification refreshed;
  std::thread refresh([&] {
    served.pserver().RefreshGauges();
    refreshed.Notify();
  });
  EXPECT_TRUE(refreshed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  table->release.Notify();
  refresh.join();
  shrink.join();
}

}  // namespace
}  // namespace sampan
