// The PS client while shards move between real pservers on loopback ports
// (issue 19): writer threads push counters through one PsClient (one writer
// id, so one sequence counter) and a puller reads them, while this test
// plays the coordinator: it moves shards with the pservers' own RPCs in the
// coordinator's order (docs/architecture.md, "Moving a shard") and serves
// its newest map through PsClientOptions::fetch_shard_map. Every counter
// must come out equal to the rounds pushed: nothing lost (a resent request
// dropped as a duplicate after a newer one reached the shard's new owner),
// nothing doubled.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/hash.h"
#include "common/shard_map.h"
#include "gtest/gtest.h"
#include "pserver/pserver.h"
#include "pserver/pserver_testlib.h"
#include "trainer/client/ps_client.h"

namespace sampan {
namespace {

constexpr uint32_t kShards = 12;

std::chrono::system_clock::time_point In(absl::Duration d) {
  return absl::ToChronoTime(absl::Now() + d);
}

// One pserver on a loopback port. (ServedPserver keeps its port to itself,
// and a client needs the address.)
struct Node {
  std::unique_ptr<Pserver> pserver;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<ps::SparseTable::Stub> stub;
  std::string address;

  ~Node() {
    server->Shutdown();
    pserver->Stop();
  }
};

// The coordinator's side of the test: the fleet, its map, and shard moves
// by the order a coordinator calls the RPCs in.
class Fleet {
 public:
  Fleet(Backend backend, int size) {
    const std::string root = FreshDir("client_move");
    for (int i = 0; i < size; ++i) {
      TableOptions t;
      t.num_shards = kShards;
      t.embedding_dim = 0;  // w only: a counter per key
      t.rule = OptimizerRule::kSgd;
      t.learning_rate = 1.0f;
      t.backend = backend;
      if (backend == Backend::kRocksDb) t.data_dir = absl::StrCat(root, "/", i);
      absl::StatusOr<std::unique_ptr<SparseTable>> table = NewTable(t);
      EXPECT_TRUE(table.ok()) << table.status();
      PserverOptions o;
      o.index = i;
      o.num_shards = kShards;
      o.run_inline = backend == Backend::kMemory;
      auto node = std::make_unique<Node>();
      node->pserver = Pserver::Create(o, std::move(*table));
      grpc::ServerBuilder builder;
      int port = 0;
      builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                               &port);
      builder.RegisterService(node->pserver->service());
      node->server = builder.BuildAndStart();
      EXPECT_NE(port, 0);
      node->address = absl::StrCat("127.0.0.1:", port);
      node->stub = ps::SparseTable::NewStub(grpc::CreateChannel(
          node->address, grpc::InsecureChannelCredentials()));
      nodes_.push_back(std::move(node));
    }
  }

  // Starts the job on the first `n` pservers (shard s on s % n); the others
  // own nothing.
  void Start(uint32_t n) {
    std::vector<std::string> addresses;
    for (uint32_t i = 0; i < n; ++i) addresses.push_back(nodes_[i]->address);
    map_ = InitialShardMap(kShards, addresses);
    for (uint32_t i = 0; i < nodes_.size(); ++i) {
      ASSERT_TRUE(SetShards(i, 1, map_.ShardsOf(i), {}).ok());
    }
  }

  ShardMap Map() const {
    std::lock_guard<std::mutex> lock(mu_);
    return map_;
  }
  int moves() const { return moves_; }
  std::vector<uint32_t> owners() const { return Map().owner; }

  // Publishes a map with the first `n` pservers, owners unchanged (every
  // shard must be on one of them).
  void Resize(uint32_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.addresses.clear();
    for (uint32_t i = 0; i < n; ++i)
      map_.addresses.push_back(nodes_[i]->address);
    ++map_.version;
    ASSERT_TRUE(ValidateShardMap(map_).ok());
  }

  // Moves `shard` to pserver `to`: freeze at the source, export into an
  // import at the target, flip both, publish, drop at the source.
  void Move(uint32_t shard, uint32_t to) {
    const ShardMap before = Map();
    const uint32_t from = before.owner[shard];
    ASSERT_NE(from, to);
    const uint64_t freeze = before.version + 1, flip = before.version + 2;
    ASSERT_TRUE(SetShards(from, freeze, before.ShardsOf(from), {shard}).ok());
    // A copy takes a while: refused pushes and pending rows pile up.
    absl::SleepFor(absl::Milliseconds(20));
    ASSERT_TRUE(Copy(shard, from, to, freeze).ok());
    ShardMap after = before;
    after.owner[shard] = to;
    after.version = flip;
    ASSERT_TRUE(SetShards(to, flip, after.ShardsOf(to), {}).ok());
    ASSERT_TRUE(SetShards(from, flip, after.ShardsOf(from), {}).ok());
    {
      std::lock_guard<std::mutex> lock(mu_);
      map_ = after;
    }
    ps::DropShardRequest drop;
    drop.set_shard(shard);
    drop.set_shard_map_version(flip);
    ps::DropShardResponse dropped;
    grpc::ClientContext ctx;
    ctx.set_deadline(In(absl::Seconds(10)));
    ASSERT_TRUE(nodes_[from]->stub->DropShard(&ctx, drop, &dropped).ok());
    ++moves_;
  }

  // Freezes `shard` where it is for `hold`, then unfreezes it (a move that
  // was called off): what clients meet while a shard is being copied.
  // Notifies `in_force` (when given) once the freeze is.
  // `in_force` is notified once the freeze holds, `lifting` just before it
  // is lifted (a client may see the thaw before this call returns).
  void FreezeFor(uint32_t shard, absl::Duration hold,
                 absl::Notification* in_force = nullptr,
                 absl::Notification* lifting = nullptr) {
    const ShardMap map = Map();
    const uint32_t owner = map.owner[shard];
    ASSERT_TRUE(
        SetShards(owner, map.version + 1, map.ShardsOf(owner), {shard}).ok());
    if (in_force != nullptr) in_force->Notify();
    absl::SleepFor(hold);
    if (lifting != nullptr) lifting->Notify();
    ASSERT_TRUE(
        SetShards(owner, map.version + 1, map.ShardsOf(owner), {}).ok());
  }

  const std::string& address(int i) const { return nodes_[i]->address; }

 private:
  grpc::Status SetShards(uint32_t node, uint64_t version,
                         const std::vector<uint32_t>& owned,
                         const std::vector<uint32_t>& frozen) {
    return CallSetShards(*nodes_[node]->stub, version, owned, frozen,
                         absl::Seconds(10));
  }

  // Streams the export of `shard` from `from` into an import at `to`, chunk
  // by chunk, as the coordinator forwards them.
  grpc::Status Copy(uint32_t shard, uint32_t from, uint32_t to,
                    uint64_t version) {
    ps::ExportShardRequest ask;
    ask.set_shard(shard);
    ask.set_shard_map_version(version);
    grpc::ClientContext export_ctx, import_ctx;
    export_ctx.set_deadline(In(absl::Seconds(20)));
    import_ctx.set_deadline(In(absl::Seconds(20)));
    auto reader = nodes_[from]->stub->ExportShard(&export_ctx, ask);
    ps::ImportShardResponse imported;
    auto writer = nodes_[to]->stub->ImportShard(&import_ctx, &imported);
    ps::ImportShardRequest piece;
    piece.set_shard(shard);
    piece.set_shard_map_version(version);
    while (reader->Read(piece.mutable_chunk())) {
      if (!writer->Write(piece)) break;
    }
    grpc::Status exported = reader->Finish();
    writer->WritesDone();
    grpc::Status s = writer->Finish();
    return exported.ok() ? s : exported;
  }

  std::vector<std::unique_ptr<Node>> nodes_;
  mutable std::mutex mu_;
  ShardMap map_;  // guarded by mu_
  std::atomic<int> moves_{0};
};

// Keys spread over every shard, `per_shard` each.
std::vector<uint64_t> Keys(int per_shard) {
  std::vector<uint64_t> keys;
  std::vector<int> count(kShards, 0);
  for (int i = 0; keys.size() < size_t(per_shard) * kShards; ++i) {
    const uint64_t key = FeatureSign(11, std::to_string(i));
    if (count[ShardOf(key, kShards)]++ < per_shard) keys.push_back(key);
  }
  return keys;
}

PsClientOptions ClientOptions(const Fleet& fleet) {
  PsClientOptions o;
  o.shard_map = fleet.Map();
  o.fetch_shard_map = [&fleet]() -> absl::StatusOr<ShardMap> {
    return fleet.Map();
  };
  o.min_map_refresh = absl::Milliseconds(50);
  o.deadline = absl::Seconds(5);
  o.retry_timeout = absl::Seconds(30);
  o.initial_backoff = absl::Milliseconds(5);
  o.max_backoff = absl::Milliseconds(100);
  o.writer_id = 42;
  return o;
}

// Writer threads push +1 to every key per round through one client while
// `moves` runs; a puller checks that reads never go backwards or past what
// was queued (`before` rounds earlier). Returns the rounds queued; the client
// is flushed.
int PushWhileMoving(PsClient& client, const std::vector<uint64_t>& keys,
                    int before, const std::function<void()>& moves) {
  constexpr int kWriters = 4;
  std::atomic<int> rounds{0};
  std::atomic<bool> moving{true};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      // Each writer its own slice of a round, so batches differ in shape.
      std::vector<float> grads(keys.size(), -1), shows(keys.size(), 1),
          clicks(keys.size(), 0);
      int mine = 0;
      while (moving.load() || mine < 20) {
        rounds.fetch_add(1);  // before: its rows may land at once
        ASSERT_TRUE(client.PushAsync(keys, grads, shows, clicks).ok());
        ++mine;
        if (mine % 7 == w) {
          ASSERT_TRUE(client.Flush().ok());
        }
        absl::SleepFor(absl::Milliseconds(1));
      }
    });
  }
  threads.emplace_back([&] {
    std::vector<float> last(keys.size(), before), rows(keys.size());
    while (moving.load()) {
      ASSERT_TRUE(client.Pull(keys, false, rows.data()).ok());
      const int queued = before + rounds.load();
      for (size_t i = 0; i < keys.size(); ++i) {
        ASSERT_GE(rows[i], last[i]) << "key " << i << " went backwards";
        ASSERT_LE(rows[i], queued) << "key " << i << " counted twice";
      }
      last = rows;
      absl::SleepFor(absl::Milliseconds(5));
    }
  });
  moves();
  moving.store(false);
  for (auto& t : threads) t.join();
  EXPECT_TRUE(client.Flush().ok());
  return rounds.load();
}

// Reads every key with a fresh client on the fleet's current map.
std::vector<float> ReadAll(const Fleet& fleet,
                           const std::vector<uint64_t>& keys) {
  PsClientOptions o = ClientOptions(fleet);
  auto reader = PsClient::Create(o);
  std::vector<float> rows(keys.size(), -1);
  EXPECT_TRUE(reader->Pull(keys, false, rows.data()).ok());
  return rows;
}

// Freezes `shard` for `hold` on a thread of its own (Fleet::FreezeFor);
// returns once the freeze is in force. thawed() once its lifting begins
// (so a client that saw the thaw never finds it false); the
// thread is joined on destruction.
class FreezeInBackground {
 public:
  FreezeInBackground(Fleet& fleet, uint32_t shard, absl::Duration hold)
      : thread_([&fleet, shard, hold, this] {
          fleet.FreezeFor(shard, hold, &in_force_, &thawed_);
        }) {
    in_force_.WaitForNotification();
  }
  ~FreezeInBackground() { thread_.join(); }
  bool thawed() const { return thawed_.HasBeenNotified(); }

 private:
  absl::Notification in_force_, thawed_;
  std::thread thread_;  // after the notifications it uses
};

class PsClientMoveTest : public ::testing::TestWithParam<Backend> {};

// 2 -> 3 pservers (a third of the shards move to the new one, a few move
// between the old two), then back to 2.
TEST_P(PsClientMoveTest, CountersExactWhileTheFleetGrowsAndShrinks) {
  Fleet fleet(GetParam(), 3);
  fleet.Start(2);
  PsClientOptions o = ClientOptions(fleet);
  o.max_keys_per_request = 16;  // many sequences per batch
  auto client = PsClient::Create(o);
  const std::vector<uint64_t> keys = Keys(8);
  // 2 -> 3: pserver 2 joins the map, then takes its third of the shards.
  int rounds = PushWhileMoving(*client, keys, 0, [&] {
    fleet.Resize(3);
    for (uint32_t s = 0; s < kShards; ++s) {
      if (s % 3 != s % 2) fleet.Move(s, s % 3);
    }
  });
  EXPECT_EQ(fleet.moves(), 8);
  EXPECT_EQ(ReadAll(fleet, keys), std::vector<float>(keys.size(), rounds));
  // 3 -> 2: pserver 2 is drained, then leaves the map.
  rounds += PushWhileMoving(*client, keys, rounds, [&] {
    for (uint32_t s = 0; s < kShards; ++s) {
      if (s % 3 != s % 2) fleet.Move(s, s % 2);
    }
    fleet.Resize(2);
  });
  EXPECT_EQ(fleet.moves(), 16);
  EXPECT_EQ(ReadAll(fleet, keys), std::vector<float>(keys.size(), rounds));
  EXPECT_GE(client->Stats().map_refreshes, 1u);
  // Shrink reaches every pserver of the current map (here 2, the third
  // owning nothing): each key's score is kept, none deleted.
  absl::StatusOr<ShrinkTotals> shrunk = client->Shrink(absl::Seconds(10));
  ASSERT_TRUE(shrunk.ok()) << shrunk.status();
  EXPECT_EQ(shrunk->rows, keys.size());
}

// Shards moving back and forth between two pservers, each move right after
// the last: requests refused mid-move meet the next move too.
TEST_P(PsClientMoveTest, CountersExactThroughMovesBackAndForth) {
  Fleet fleet(GetParam(), 2);
  fleet.Start(2);
  auto client = PsClient::Create(ClientOptions(fleet));
  const std::vector<uint64_t> keys = Keys(6);
  const int rounds = PushWhileMoving(*client, keys, 0, [&] {
    for (int pass = 0; pass < 3; ++pass) {
      for (uint32_t s = 0; s < kShards; s += 2) {
        fleet.Move(s, 1 - fleet.owners()[s]);
      }
    }
  });
  EXPECT_EQ(fleet.moves(), 18);
  EXPECT_EQ(ReadAll(fleet, keys), std::vector<float>(keys.size(), rounds));
}

// A frozen shard's pushes wait with backoff (a probe every backoff, each
// counted as a retry): the map is asked for at most once per
// min_map_refresh, not once per refusal.
TEST_P(PsClientMoveTest, FrozenShardIsRetriedWithBackoffNotSpun) {
  Fleet fleet(GetParam(), 2);
  fleet.Start(2);
  std::atomic<int> fetches{0};
  PsClientOptions o = ClientOptions(fleet);
  o.min_map_refresh = absl::Seconds(1);
  o.max_backoff = absl::Milliseconds(50);
  o.fetch_shard_map = [&]() -> absl::StatusOr<ShardMap> {
    fetches.fetch_add(1);
    return fleet.Map();
  };
  auto client = PsClient::Create(o);
  const std::vector<uint64_t> keys = Keys(4);
  std::vector<float> grads(keys.size(), -1), ones(keys.size(), 1),
      zeros(keys.size(), 0);
  // Pushed once the freeze is in force. (A fixed 100 ms sleep here let the
  // push land before a slow freeze on a loaded machine.)
  FreezeInBackground freeze(fleet, 0, absl::Milliseconds(1500));
  ASSERT_TRUE(client->PushAsync(keys, grads, ones, zeros).ok());
  ASSERT_TRUE(client->Flush().ok());
  EXPECT_TRUE(freeze.thawed());  // it waited for the thaw
  const PsClientStats stats = client->Stats();
  EXPECT_GE(stats.push_retries, 10u);  // refused all along
  EXPECT_LE(fetches.load(), 4) << stats.push_retries << " retries";
  EXPECT_EQ(ReadAll(fleet, keys), std::vector<float>(keys.size(), 1.0f));
}

// A move freezes one shard, not its pserver: with shard 0 frozen, the keys
// of pserver 0's other shards pushed in the same batch land during the
// freeze; shard 0's are held and land once, after the thaw.
TEST_P(PsClientMoveTest, PushesToAFrozenShardsNeighboursGoOn) {
  Fleet fleet(GetParam(), 2);
  fleet.Start(2);
  auto client = PsClient::Create(ClientOptions(fleet));
  const std::vector<uint64_t> keys = Keys(4);
  std::vector<float> grads(keys.size(), -1), ones(keys.size(), 1),
      zeros(keys.size(), 0);
  FreezeInBackground freeze(fleet, 0, absl::Seconds(3));
  ASSERT_TRUE(client->PushAsync(keys, grads, ones, zeros).ok());
  std::vector<float> rows;
  bool landed = false, thawed_then = true;
  for (absl::Time give_up = absl::Now() + absl::Seconds(3);
       !landed && absl::Now() < give_up;
       absl::SleepFor(absl::Milliseconds(20))) {
    thawed_then = freeze.thawed();
    rows = ReadAll(fleet, keys);
    landed = true;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (ShardOf(keys[i], kShards) != 0) landed &= rows[i] == 1.0f;
    }
  }
  EXPECT_TRUE(landed) << "the other shards' keys did not land";
  EXPECT_FALSE(thawed_then) << "they landed only after the thaw";
  for (size_t i = 0; i < keys.size(); ++i) {
    if (ShardOf(keys[i], kShards) == 0) {
      EXPECT_EQ(rows[i], 0.0f) << "key " << i << " of the frozen shard";
    }
  }
  ASSERT_TRUE(client->Flush().ok());
  EXPECT_TRUE(freeze.thawed());
  EXPECT_EQ(ReadAll(fleet, keys), std::vector<float>(keys.size(), 1.0f));
}

INSTANTIATE_TEST_SUITE_P(Backends, PsClientMoveTest,
                         ::testing::Values(Backend::kMemory, Backend::kRocksDb),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param == Backend::kMemory ? "Memory"
                                                                 : "RocksDb";
                         });

}  // namespace
}  // namespace sampan
