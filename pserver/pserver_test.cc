// One pserver serving two RocksDB tables (the sparse rows and an ASYNC job's
// dense weights) on a real loopback port, driven by a raw stub: requests go
// to the table they name, the tables' row widths are checked separately, an
// unknown table is refused by name, and a checkpoint holds both tables.
#include "pserver/pserver.h"

#include <grpcpp/grpcpp.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

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

class TwoTablePserverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = absl::StrCat(testing::TempDir(), "/two_tables_",
                         testing::UnitTest::GetInstance()->random_seed());
    std::filesystem::remove_all(root_);
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
    pserver_ = Pserver::Create(o, std::move(tables));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(pserver_->service());
    server_ = builder.BuildAndStart();
    ASSERT_NE(port, 0);
    stub_ = ps::SparseTable::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override { Shutdown(); }

  void Shutdown() {
    if (server_ == nullptr) return;
    server_->Shutdown();
    pserver_->Stop();
    server_.reset();
    pserver_.reset();
  }

  grpc::Status Push(uint32_t table, uint64_t key,
                    const std::vector<float>& grad, uint64_t sequence) {
    ps::PushRequest req;
    req.set_table_id(table);
    req.add_keys(key);
    req.set_grads(std::string(reinterpret_cast<const char*>(grad.data()),
                              grad.size() * sizeof(float)));
    req.add_shows(1);
    req.add_clicks(0);
    req.set_writer_id(7);
    req.set_sequence(sequence);
    ps::PushResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    return stub_->Push(&ctx, req, &resp);
  }

  std::vector<float> Pull(uint32_t table, uint64_t key) {
    ps::PullRequest req;
    req.set_table_id(table);
    req.add_keys(key);
    ps::PullResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    const grpc::Status s = stub_->Pull(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<float> out(resp.values().size() / sizeof(float));
    std::memcpy(out.data(), resp.values().data(), resp.values().size());
    return out;
  }

  std::string root_, data_;
  std::unique_ptr<Pserver> pserver_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ps::SparseTable::Stub> stub_;
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
  ASSERT_TRUE(stub_->Stats(&ctx, stats_req, &stats).ok());
  EXPECT_EQ(stats.num_shards(), kShards);
}

// The checkpoint directory is laid out as the data directory (table 1 in
// table-1/), so resume's copy of it brings both tables back.
TEST_F(TwoTablePserverTest, CheckpointHoldsBothTables) {
  const uint64_t key = 777;
  ASSERT_TRUE(Push(0, key, {2}, 1).ok());
  ASSERT_TRUE(Push(1, key, {1, 0, 0, 3}, 1).ok());
  const std::string ckpt = root_ + "/ckpt-1";
  ps::CheckpointRequest req;
  req.set_epoch(1);
  req.set_dir(ckpt);
  ps::CheckpointResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status s = stub_->Checkpoint(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // Changes after the checkpoint are not in it.
  ASSERT_TRUE(Push(1, key, {1, 1, 1, 1}, 2).ok());
  Shutdown();

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

}  // namespace
}  // namespace sampan
