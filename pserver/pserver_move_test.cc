// Moving a shard between two pservers on real loopback ports, through the
// RPCs a coordinator calls (SetShards, ExportShard, ImportShard,
// DropShard), for a memory and a RocksDB table: the freeze refuses pushes
// with the map version (or, with partial_ok, applies the other shards' keys
// and names the frozen one) and answers pulls, the rows and sequences arrive
// (a replayed push is a duplicate on the target), ownership flips, the
// source drops the shard, and the move metrics count it (promtool-clean).
// Then the refusals, each naming the RPC and the field, and a freeze that
// waits for a push already being applied.
#include <grpcpp/grpcpp.h>

#include <thread>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "common/hash.h"
#include "common/shard_map.h"
#include "gtest/gtest.h"
#include "pserver/metrics.h"
#include "pserver/pserver_testlib.h"

namespace sampan {
namespace {

constexpr uint32_t kShards = 4;
constexpr uint32_t kMoving = 2;

TableOptions Options(Backend backend, const std::string& dir) {
  TableOptions t;
  t.num_shards = kShards;
  t.embedding_dim = 2;
  t.rule = OptimizerRule::kAdagrad;
  t.backend = backend;
  t.data_dir = backend == Backend::kRocksDb ? dir : "";
  return t;
}

std::chrono::system_clock::time_point In(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

grpc::Status SetShards(ServedPserver& ps, uint64_t version,
                       const std::vector<uint32_t>& owned,
                       const std::vector<uint32_t>& frozen = {},
                       int seconds = 10) {
  return CallSetShards(ps.stub(), version, owned, frozen,
                       absl::Seconds(seconds));
}

grpc::Status Export(ServedPserver& ps, uint32_t table, uint32_t shard,
                    uint64_t version, std::vector<ps::ShardChunk>* chunks) {
  ps::ExportShardRequest req;
  req.set_table_id(table);
  req.set_shard(shard);
  req.set_shard_map_version(version);
  grpc::ClientContext ctx;
  ctx.set_deadline(In(10));
  auto reader = ps.stub().ExportShard(&ctx, req);
  ps::ShardChunk chunk;
  while (reader->Read(&chunk)) chunks->push_back(chunk);
  return reader->Finish();
}

// Streams `chunks`, each message naming (table, shard, version).
grpc::Status Import(ServedPserver& ps, uint32_t table, uint32_t shard,
                    uint64_t version, const std::vector<ps::ShardChunk>& chunks,
                    ps::ImportShardResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(In(10));
  auto writer = ps.stub().ImportShard(&ctx, resp);
  for (const ps::ShardChunk& chunk : chunks) {
    ps::ImportShardRequest req;
    req.set_table_id(table);
    req.set_shard(shard);
    req.set_shard_map_version(version);
    *req.mutable_chunk() = chunk;
    if (!writer->Write(req)) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

grpc::Status Drop(ServedPserver& ps, uint32_t table, uint32_t shard,
                  uint64_t version, uint64_t* rows = nullptr) {
  ps::DropShardRequest req;
  req.set_table_id(table);
  req.set_shard(shard);
  req.set_shard_map_version(version);
  ps::DropShardResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(In(10));
  grpc::Status s = ps.stub().DropShard(&ctx, req, &resp);
  if (rows != nullptr) *rows = resp.rows();
  return s;
}

std::unique_ptr<ServedPserver> Serve(Backend backend, const std::string& dir,
                                     uint32_t index,
                                     std::vector<uint32_t> owned) {
  auto table = NewTable(Options(backend, dir));
  EXPECT_TRUE(table.ok()) << table.status();
  std::vector<std::unique_ptr<SparseTable>> tables;
  tables.push_back(std::move(*table));
  PserverOptions o;
  o.index = index;
  o.num_shards = kShards;
  o.owned_shards = std::move(owned);
  o.run_inline = backend == Backend::kMemory;
  return std::make_unique<ServedPserver>(o, std::move(tables));
}

std::vector<uint64_t> KeysIn(uint32_t shard, int n) {
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; keys.size() < size_t(n); ++k) {
    if (ShardOf(k, kShards) == shard) keys.push_back(k);
  }
  return keys;
}

std::vector<float> Grads(size_t keys, float g) {
  return std::vector<float>(keys * 3, g);
}

std::vector<std::vector<float>> PullAll(ServedPserver& ps,
                                        const std::vector<uint64_t>& keys) {
  std::vector<std::vector<float>> rows;
  for (uint64_t k : keys) rows.push_back(ps.Pull(0, k));
  return rows;
}

class PserverMoveTest : public ::testing::TestWithParam<Backend> {};

TEST_P(PserverMoveTest, MovesAShardWithItsSequences) {
  const std::string root = FreshDir("move");
  auto a = Serve(GetParam(), root + "/a", 0, {0, 1, 2, 3});
  auto b = Serve(GetParam(), root + "/b", 1, {0, 1, 3});
  const std::vector<uint64_t> mine = KeysIn(kMoving, 300);
  const std::vector<uint64_t> other = KeysIn(0, 10);
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    ASSERT_TRUE(a->Push(0, mine, Grads(mine.size(), 0.1f * seq), seq).ok());
  }
  const std::vector<std::vector<float>> before = PullAll(*a, mine);
  PserverMetrics* m = PserverMetrics::Get();
  const double exported = m->shard_move_rows[0]->Value();
  const double imported = m->shard_move_rows[1]->Value();

  // Freeze at the source: pushes refused with the version, pulls answered.
  ASSERT_TRUE(SetShards(*a, 2, {0, 1, 2, 3}, {kMoving}).ok());
  {
    ps::PushRequest req;
    req.set_table_id(0);
    req.add_keys(mine[0]);
    req.add_shows(1);
    req.add_clicks(0);
    req.set_grads(std::string(3 * sizeof(float), '\0'));
    req.set_writer_id(7);
    req.set_sequence(4);
    ps::PushResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(In(10));
    const grpc::Status s = a->stub().Push(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::ABORTED);
    EXPECT_TRUE(absl::StrContains(s.error_message(),
                                  "is moving off pserver 0 (shard map "
                                  "version 2)"))
        << s.error_message();
    const auto& trailers = ctx.GetServerTrailingMetadata();
    auto it = trailers.find(kShardMapVersionKey);
    ASSERT_NE(it, trailers.end());
    EXPECT_EQ(std::string(it->second.data(), it->second.size()), "2");
  }
  // With partial_ok the push is split: the keys of shards not frozen are
  // applied, the frozen shard is named and its keys are left.
  {
    const uint64_t neighbour = KeysIn(1, 1)[0];
    const std::vector<float> neighbour_before = a->Pull(0, neighbour);
    ps::PushRequest req;
    req.set_table_id(0);
    req.add_keys(mine[0]);
    req.add_keys(neighbour);
    for (int i = 0; i < 2; ++i) {
      req.add_shows(1);
      req.add_clicks(0);
    }
    const std::vector<float> g = Grads(2, 0.5f);
    req.set_grads(reinterpret_cast<const char*>(g.data()),
                  g.size() * sizeof(float));
    req.set_writer_id(8);
    req.set_sequence(1);
    req.set_partial_ok(true);
    ps::PushResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(In(10));
    const grpc::Status s = a->stub().Push(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(resp.applied(), 1u);
    ASSERT_EQ(resp.moving_shards_size(), 1);
    EXPECT_EQ(resp.moving_shards(0), kMoving);
    EXPECT_NE(a->Pull(0, neighbour), neighbour_before);
  }
  EXPECT_EQ(PullAll(*a, mine), before);  // nothing applied; pulls answered
  EXPECT_TRUE(a->Push(0, other, Grads(other.size(), 1), 4).ok());

  // Export from A into B.
  std::vector<ps::ShardChunk> chunks;
  ASSERT_TRUE(Export(*a, 0, kMoving, 2, &chunks).ok());
  ASSERT_FALSE(chunks.empty());
  EXPECT_TRUE(chunks.back().last());
  EXPECT_EQ(chunks.back().total_rows(), mine.size());
  ASSERT_EQ(chunks.back().writers_size(), 1);
  EXPECT_EQ(chunks.back().writers(0), 7u);
  EXPECT_EQ(chunks.back().sequences(0), 3u);
  ps::ImportShardResponse imported_resp;
  const grpc::Status in = Import(*b, 0, kMoving, 2, chunks, &imported_resp);
  ASSERT_TRUE(in.ok()) << in.error_message();
  EXPECT_EQ(imported_resp.rows(), mine.size());

  // Flip: B owns the shard, A does not; A drops it.
  ASSERT_TRUE(SetShards(*b, 3, {0, 1, 2, 3}).ok());
  ASSERT_TRUE(SetShards(*a, 3, {0, 1, 3}).ok());
  EXPECT_EQ(PullAll(*b, mine), before);
  // The source's last push, replayed to the target, is a duplicate.
  ps::PushResponse replay;
  {
    ps::PushRequest req;
    req.set_table_id(0);
    for (uint64_t k : mine) {
      req.add_keys(k);
      req.add_shows(1);
      req.add_clicks(0);
    }
    const std::vector<float> g = Grads(mine.size(), 0.3f);
    req.set_grads(std::string(reinterpret_cast<const char*>(g.data()),
                              g.size() * sizeof(float)));
    req.set_writer_id(7);
    req.set_sequence(3);
    grpc::ClientContext ctx;
    ctx.set_deadline(In(10));
    ASSERT_TRUE(b->stub().Push(&ctx, req, &replay).ok());
  }
  EXPECT_EQ(replay.applied(), 0u);
  EXPECT_EQ(PullAll(*b, mine), before);
  ASSERT_TRUE(b->Push(0, mine, Grads(mine.size(), 0.4f), 5).ok());
  EXPECT_NE(PullAll(*b, mine), before);

  const grpc::Status gone = a->Push(0, mine, Grads(mine.size(), 1), 6);
  EXPECT_EQ(gone.error_code(), grpc::StatusCode::ABORTED);
  uint64_t dropped = 0;
  ASSERT_TRUE(Drop(*a, 0, kMoving, 3, &dropped).ok());
  EXPECT_EQ(dropped, mine.size());
  std::vector<ps::ShardChunk> none;
  EXPECT_EQ(Export(*a, 0, kMoving, 3, &none).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  EXPECT_EQ(m->shard_move_rows[0]->Value(), exported + mine.size());
  EXPECT_EQ(m->shard_move_rows[1]->Value(), imported + mine.size());
  EXPECT_EQ(m->shards_moving->Value(), 0);
  EXPECT_EQ(m->shard_map_version->Value(), 3);
  EXPECT_EQ(PromtoolComplaints(), "");
}

INSTANTIATE_TEST_SUITE_P(Backends, PserverMoveTest,
                         ::testing::Values(Backend::kMemory, Backend::kRocksDb),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param == Backend::kMemory ? "Memory"
                                                                 : "RocksDb";
                         });

void ExpectRefused(const grpc::Status& s, grpc::StatusCode code,
                   const std::string& text) {
  EXPECT_EQ(s.error_code(), code) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), text))
      << s.error_message() << "\n  wanted: " << text;
}

TEST(PserverMoveRefusalTest, BadRequestsNameTheRpcAndField) {
  const std::string root = FreshDir("move_refusals");
  auto a = Serve(Backend::kRocksDb, root + "/a", 0, {0, 1});
  const auto invalid = grpc::StatusCode::INVALID_ARGUMENT;
  const auto precondition = grpc::StatusCode::FAILED_PRECONDITION;
  ExpectRefused(SetShards(*a, 0, {0}), invalid,
                "SetShards: shard_map_version must be >= 1");
  ExpectRefused(SetShards(*a, 2, {0, 9}), invalid,
                "SetShards: owned_shards[1] = 9 out of range (num_shards 4)");
  ExpectRefused(SetShards(*a, 2, {0, 0}), invalid,
                "SetShards: owned_shards[1] = 0 is listed twice");
  ExpectRefused(SetShards(*a, 2, {0}, {3}), invalid,
                "SetShards: frozen_shards[0] = 3 is not in owned_shards");
  ASSERT_TRUE(SetShards(*a, 5, {0, 1}, {1}).ok());
  ExpectRefused(SetShards(*a, 4, {0}), precondition,
                "SetShards: shard_map_version 4 is older than pserver 0's 5");
  ASSERT_TRUE(SetShards(*a, 5, {0, 1}, {1}).ok());  // a retry

  std::vector<ps::ShardChunk> chunks;
  ExpectRefused(Export(*a, 3, 1, 5, &chunks), invalid,
                "ExportShard: unknown table_id 3 (this job has table 0 only)");
  ExpectRefused(Export(*a, 0, 9, 5, &chunks), invalid,
                "ExportShard: shard 9 out of range (num_shards 4)");
  ExpectRefused(Export(*a, 0, 0, 5, &chunks), precondition,
                "ExportShard: shard 0 is owned but not frozen by pserver 0");
  ExpectRefused(Export(*a, 0, 2, 5, &chunks), precondition,
                "ExportShard: shard 2 is not owned by pserver 0");
  ExpectRefused(Export(*a, 0, 1, 4, &chunks), precondition,
                "ExportShard: shard_map_version 4 is older");
  ExpectRefused(Drop(*a, 0, 0, 5), precondition,
                "DropShard: shard 0 is owned by pserver 0");

  ps::ImportShardResponse resp;
  ps::ShardChunk good;
  const uint64_t key = KeysIn(2, 1)[0];
  good.add_keys(key);
  good.add_widths(6);  // a row without its embedding: all zeros is one
  good.set_floats(std::string(6 * sizeof(float), '\0'));
  good.set_last(true);
  good.set_total_rows(1);
  ExpectRefused(Import(*a, 0, 0, 5, {good}, &resp), precondition,
                "ImportShard: shard 0 is owned by pserver 0; import only a "
                "shard it does not own yet");
  ps::ShardChunk cut = good;
  cut.set_last(false);
  ExpectRefused(Import(*a, 0, 2, 5, {cut}, &resp), invalid,
                "ImportShard: the stream ended without the export's last "
                "chunk (1 rows received); nothing imported");
  ps::ShardChunk short_total = good;
  short_total.set_total_rows(2);
  ExpectRefused(Import(*a, 0, 2, 5, {short_total}, &resp), invalid,
                "ImportShard: 1 rows received, the last chunk's total_rows "
                "says 2");
  ps::ShardChunk odd = good;
  odd.set_floats(std::string(5, '\0'));
  ExpectRefused(Import(*a, 0, 2, 5, {odd}, &resp), invalid,
                "ImportShard: chunk.floats has 5 bytes");
  ps::ShardChunk unpaired = good;
  unpaired.add_writers(7);
  ExpectRefused(Import(*a, 0, 2, 5, {unpaired}, &resp), invalid,
                "ImportShard: chunk.writers has 1 entries, chunk.sequences 0");
  // The table's own check: this table's rows are 6 or 9 floats wide.
  ps::ShardChunk narrow = good;
  narrow.set_widths(0, 3);
  narrow.set_floats(std::string(3 * sizeof(float), '\0'));
  ExpectRefused(
      Import(*a, 0, 2, 5, {narrow}, &resp), invalid,
      absl::StrCat("ImportShard: row 0 (key ", key, ") has 3 floats"));
  ExpectRefused(Import(*a, 0, 2, 5, {}, &resp), invalid,
                "ImportShard: the stream ended before its first message");
  // After all that, shard 2 holds nothing.
  ASSERT_TRUE(SetShards(*a, 6, {0, 1, 2}, {2}).ok());
  ASSERT_TRUE(Export(*a, 0, 2, 6, &chunks).ok());
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].total_rows(), 0u);
}

// A memory table whose pushes wait to be released.
class BlockingPushTable : public ForwardingTable {
 public:
  BlockingPushTable()
      : ForwardingTable(NewMemoryTable(Options(Backend::kMemory, ""))) {}
  absl::Notification entered, release;

  absl::StatusOr<PushResult> Push(const PushBatch& batch) override {
    entered.Notify();
    release.WaitForNotification();
    return inner_->Push(batch);
  }
};

// SetShards returns only once no push that passed the old state is still
// being applied to a shard it freezes: the export after it is a cut.
TEST(PserverMoveFreezeTest, FreezeWaitsForPushesBeingApplied) {
  auto owned = std::make_unique<BlockingPushTable>();
  BlockingPushTable* table = owned.get();
  std::vector<std::unique_ptr<SparseTable>> tables;
  tables.push_back(std::move(owned));
  PserverOptions o;
  o.num_shards = kShards;
  ServedPserver served(o, std::move(tables));
  const std::vector<uint64_t> keys = KeysIn(kMoving, 1);
  std::thread push(
      [&] { EXPECT_TRUE(served.Push(0, keys, Grads(1, 1), 1).ok()); });
  table->entered.WaitForNotification();
  // Only the code: past the deadline gRPC may answer before the server does.
  EXPECT_EQ(SetShards(served, 2, {0, 1, 2, 3}, {kMoving}, 1).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  table->release.Notify();
  push.join();
  ASSERT_TRUE(SetShards(served, 2, {0, 1, 2, 3}, {kMoving}).ok());
}

}  // namespace
}  // namespace sampan
