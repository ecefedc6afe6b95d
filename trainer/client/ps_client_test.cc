// A real gRPC server on a loopback port, driven by the real client and by a
// raw stub for requests the client would never send.
#include "trainer/client/ps_client.h"

#include <grpcpp/grpcpp.h>

#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "common/hash.h"
#include "gtest/gtest.h"
#include "pserver/pserver.h"
#include "trainer/client/client_metrics.h"
#include "trainer/client/routes.h"

namespace sampan {
namespace {

constexpr uint32_t kShards = 16;

// Two pservers of one job, each in this process on its own port; the
// parameter is PserverOptions::run_inline (every test runs both ways).
class PserverTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    pservers_.resize(2);
    servers_.resize(2);
    for (uint32_t i = 0; i < 2; ++i) {
      const int port = StartPserver(i, "127.0.0.1:0");
      ASSERT_NE(port, 0);
      addresses_.push_back("127.0.0.1:" + std::to_string(port));
    }
  }

  // Starts pserver `index` (replacing one shut down) on `address`; returns
  // its port, 0 if it could not listen.
  int StartPserver(uint32_t index, const std::string& address) {
    PserverOptions o;
    o.index = index;
    o.num_shards = kShards;
    o.owned_shards = InitialShardMap(kShards, {"", ""}).ShardsOf(index);
    o.run_inline = GetParam();
    TableOptions t;
    t.num_shards = kShards;
    t.embedding_dim = 0;  // w only: a counter per key
    t.rule = OptimizerRule::kSgd;
    t.learning_rate = 1.0f;
    // Shrink: a key's score is 0.1 per show, 0.9 of it after each shrink.
    t.show_decay_rate = 0.9f;
    t.delete_threshold = 0.15f;
    servers_[index].reset();  // before the service it serves
    pservers_[index] = Pserver::Create(o, NewMemoryTable(t));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
    builder.SetMaxReceiveMessageSize(256 << 20);  // as sampan pserver does
    builder.RegisterService(pservers_[index]->service());
    servers_[index] = builder.BuildAndStart();
    return port;
  }

  void TearDown() override {
    for (size_t i = 0; i < servers_.size(); ++i) {
      servers_[i]->Shutdown();
      pservers_[i]->Stop();
    }
  }

  PsClientOptions ClientOptions() const {
    PsClientOptions o;
    o.shard_map = InitialShardMap(kShards, addresses_);
    o.row_dim = 1;
    o.deadline = absl::Seconds(5);
    o.retry_timeout = absl::Seconds(5);
    return o;
  }

  // A raw stub to the pserver that owns `key`.
  std::unique_ptr<ps::SparseTable::Stub> StubFor(uint64_t key, int* index) {
    *index = PserverOfShard(ShardOf(key, kShards), 2);
    return ps::SparseTable::NewStub(grpc::CreateChannel(
        addresses_[*index], grpc::InsecureChannelCredentials()));
  }

  std::vector<std::unique_ptr<Pserver>> pservers_;
  std::vector<std::unique_ptr<grpc::Server>> servers_;
  std::vector<std::string> addresses_;
};

std::vector<float> PullAll(PsClient& client, const std::vector<uint64_t>& k) {
  std::vector<float> out(k.size(), -1.0f);
  EXPECT_TRUE(client.Pull(k, false, out.data()).ok());
  return out;
}

TEST_P(PserverTest, ConcurrentClientsMatchSingleThreadedReference) {
  constexpr int kClients = 4, kThreads = 3, kRounds = 40, kKeys = 500;
  std::vector<uint64_t> keys(kKeys);
  for (int i = 0; i < kKeys; ++i) keys[i] = FeatureSign(1, std::to_string(i));
  // Reference: every thread pushes -(1 + i % 3) to key i each round; with
  // SGD and learning rate 1, w[i] ends at the exact integer sum.
  std::vector<float> expected(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    expected[i] = kClients * kThreads * kRounds * (1 + i % 3);
  }
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    PsClientOptions o = ClientOptions();
    o.writer_id = c + 1;
    o.max_keys_per_request = 64;  // forces splitting into many requests
    std::shared_ptr<PsClient> client = PsClient::Create(o);
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([client, &keys] {
        std::vector<float> grads(kKeys), ones(kKeys, 1), zeros(kKeys, 0);
        for (int i = 0; i < kKeys; ++i) grads[i] = -(1 + i % 3);
        std::vector<float> rows(kKeys);
        for (int r = 0; r < kRounds; ++r) {
          ASSERT_TRUE(client->Pull(keys, true, rows.data()).ok());
          ASSERT_TRUE(client->PushAsync(keys, grads, ones, zeros).ok());
        }
        ASSERT_TRUE(client->Flush().ok());
      });
    }
  }
  for (auto& t : threads) t.join();
  auto reader = PsClient::Create(ClientOptions());
  EXPECT_EQ(PullAll(*reader, keys), expected);
}

// A push of one key with gradient `grad` (SGD, lr 1: w -= grad).
ps::PushRequest OneKeyPush(uint64_t key, float grad, float click) {
  ps::PushRequest req;
  req.add_keys(key);
  req.set_grads(&grad, sizeof grad);
  req.add_shows(1);
  req.add_clicks(click);
  return req;
}

TEST_P(PserverTest, ReplayedPushIsAppliedOnce) {
  const uint64_t key = FeatureSign(2, "x");
  int index;
  auto stub = StubFor(key, &index);
  ps::PushRequest req = OneKeyPush(key, -1.0f, 0);
  req.set_writer_id(99);
  req.set_sequence(1);
  for (int attempt = 0; attempt < 3; ++attempt) {  // a retried push
    grpc::ClientContext ctx;
    ps::PushResponse resp;
    ASSERT_TRUE(stub->Push(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.applied(), attempt == 0 ? 1u : 0u);
  }
  auto client = PsClient::Create(ClientOptions());
  EXPECT_EQ(PullAll(*client, {key}), std::vector<float>{1.0f});
}

// Sends `req` and expects INVALID_ARGUMENT whose message contains `what`.
void ExpectRejected(ps::SparseTable::Stub& stub, const ps::PushRequest& req,
                    const std::string& what) {
  grpc::ClientContext ctx;
  ps::PushResponse resp;
  grpc::Status s = stub.Push(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << what;
  EXPECT_TRUE(absl::StrContains(s.error_message(), what)) << s.error_message();
}

TEST_P(PserverTest, BadRequestsAreRejectedAndServerKeepsServing) {
  const uint64_t key = FeatureSign(3, "y");
  int index;
  auto stub = StubFor(key, &index);
  const ps::PushRequest good = OneKeyPush(key, -2.0f, 1);

  ps::PushRequest truncated = good;
  truncated.set_grads(std::string(3, '\0'));
  ExpectRejected(*stub, truncated, "grads has 3 bytes, expected 4");

  ps::PushRequest mismatched = good;
  mismatched.add_shows(1);
  ExpectRejected(*stub, mismatched, "shows/clicks have 2/1 entries");

  ps::PushRequest wrong_table = good;
  wrong_table.set_table_id(7);
  ExpectRejected(*stub, wrong_table, "unknown table_id 7");

  ps::PushRequest misrouted = good;
  uint64_t other = key + 1;
  while (static_cast<int>(PserverOfShard(ShardOf(other, kShards), 2)) ==
         index) {
    ++other;
  }
  misrouted.set_keys(0, other);
  {
    // Not a bad request but a stale map: ABORTED, with the pserver's map
    // version for the client to compare with its own.
    grpc::ClientContext ctx;
    ps::PushResponse resp;
    grpc::Status s = stub->Push(&ctx, misrouted, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::ABORTED);
    EXPECT_TRUE(absl::StrContains(s.error_message(), "is not owned by"))
        << s.error_message();
    EXPECT_EQ(RefusedByMapVersion(ctx), 1u);
  }

  ps::PushRequest not_finite = good;
  const float nan = std::nanf("");
  not_finite.set_grads(&nan, sizeof nan);
  ExpectRejected(*stub, not_finite, "not finite");

  ps::PushRequest oversized;
  oversized.mutable_keys()->Resize(kMaxKeysPerRequest + 1, key);
  ExpectRejected(*stub, oversized, "exceed the limit");

  // None of that changed anything, and a good push still works.
  grpc::ClientContext ctx;
  ps::PushResponse resp;
  ASSERT_TRUE(stub->Push(&ctx, good, &resp).ok());
  auto client = PsClient::Create(ClientOptions());
  EXPECT_EQ(PullAll(*client, {key}), std::vector<float>{2.0f});
}

TEST_P(PserverTest, LargePullIsSplitNotRejected) {
  PsClientOptions o = ClientOptions();
  o.max_keys_per_request = 1000;
  auto client = PsClient::Create(o);
  std::vector<uint64_t> keys(25000);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i * 7919 + 1;
  std::vector<float> grads(keys.size()), ones(keys.size(), 1),
      zeros(keys.size(), 0);
  for (size_t i = 0; i < keys.size(); ++i) grads[i] = -float(i % 5);
  ASSERT_TRUE(client->PushAsync(keys, grads, ones, zeros).ok());
  ASSERT_TRUE(client->Flush().ok());
  std::vector<float> rows = PullAll(*client, keys);
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(rows[i], float(i % 5));
}

TEST_P(PserverTest, DeadServerFailsWithinTheRetryBudget) {
  PsClientOptions o = ClientOptions();
  o.deadline = absl::Milliseconds(200);
  o.retry_timeout = absl::Milliseconds(600);
  servers_[1]->Shutdown();  // pserver 1 is gone
  auto client = PsClient::Create(o);
  std::vector<uint64_t> keys(64);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i + 1;
  std::vector<float> rows(keys.size());
  const absl::Time start = absl::Now();
  absl::Status s = client->Pull(keys, false, rows.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "pserver 1")) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));  // bounded, not a hang
}

// Pushes `keys` with gradient -1 and `show` shows each, and waits for them.
void PushShows(PsClient& client, const std::vector<uint64_t>& keys,
               float show) {
  std::vector<float> grads(keys.size(), -1), shows(keys.size(), show),
      clicks(keys.size(), 0);
  ASSERT_TRUE(client.PushAsync(keys, grads, shows, clicks).ok());
  ASSERT_TRUE(client.Flush().ok());
}

// Keys of slot `slot` that route to each of the two pservers, `n` apiece.
std::vector<uint64_t> KeysOnBoth(int slot, int n) {
  std::vector<uint64_t> keys;
  int on[2] = {0, 0};
  for (int i = 0; on[0] < n || on[1] < n; ++i) {
    const uint64_t key = FeatureSign(slot, std::to_string(i));
    int& count = on[PserverOfShard(ShardOf(key, kShards), 2)];
    if (count < n) {
      ++count;
      keys.push_back(key);
    }
  }
  return keys;
}

TEST_P(PserverTest, ShrinkSumsEveryPserversCounts) {
  auto client = PsClient::Create(ClientOptions());
  const std::vector<uint64_t> rare = KeysOnBoth(5, 20), kept = KeysOnBoth(6, 5);
  PushShows(*client, rare, 1);  // score 0.09 after a shrink: deleted
  PushShows(*client, kept, 2);  // 0.18: kept
  absl::StatusOr<ShrinkTotals> totals = client->Shrink(absl::Seconds(30));
  ASSERT_TRUE(totals.ok()) << totals.status();
  EXPECT_EQ(totals->deleted_rows, rare.size());
  EXPECT_EQ(totals->rows, kept.size());
  EXPECT_EQ(PullAll(*client, rare), std::vector<float>(rare.size(), 0.0f));
  EXPECT_EQ(PullAll(*client, kept), std::vector<float>(kept.size(), 1.0f));
}

// A pserver not up yet is retried; the one that shrank is not asked again
// (a second shrink would delete its rows).
TEST_P(PserverTest, ShrinkRetriesAPserverThatIsNotUpYet) {
  PsClientOptions o = ClientOptions();
  o.retry_timeout = absl::Seconds(30);
  auto client = PsClient::Create(o);
  // Score 0.1575 after one shrink (kept), 0.142 after two (deleted).
  const std::vector<uint64_t> keys = KeysOnBoth(7, 5);
  PushShows(*client, keys, 1.75f);
  servers_[1]->Shutdown();
  pservers_[1]->Stop();
  absl::Notification shrunk;
  absl::StatusOr<ShrinkTotals> totals;
  std::thread shrink([&] {
    totals = client->Shrink(absl::Seconds(10));
    shrunk.Notify();
  });
  EXPECT_FALSE(shrunk.WaitForNotificationWithTimeout(absl::Milliseconds(500)));
  const std::string port = addresses_[1].substr(addresses_[1].rfind(':') + 1);
  ASSERT_EQ(std::to_string(StartPserver(1, addresses_[1])), port);
  shrink.join();
  ASSERT_TRUE(totals.ok()) << totals.status();
  // Pserver 1 came back empty (a memory table); pserver 0 shrank once.
  EXPECT_EQ(totals->deleted_rows, 0u);
  EXPECT_EQ(totals->rows, keys.size() / 2);
  std::vector<float> rows = PullAll(*client, keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    const bool on_0 = PserverOfShard(ShardOf(keys[i], kShards), 2) == 0;
    EXPECT_EQ(rows[i], on_0 ? 1.0f : 0.0f) << i;
  }
}

TEST_P(PserverTest, ShrinkOfAnUnknownTableFailsWithoutRetrying) {
  PsClientOptions o = ClientOptions();
  o.table_id = 3;
  auto client = PsClient::Create(o);
  const absl::Time start = absl::Now();
  absl::StatusOr<ShrinkTotals> totals = client->Shrink(absl::Seconds(10));
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));  // retry_timeout is 5 s
  EXPECT_EQ(totals.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(totals.status().message(), "Shrink on pserver"))
      << totals.status();
  EXPECT_TRUE(
      absl::StrContains(totals.status().message(), "unknown table_id 3"))
      << totals.status();
}

// Pushes -1 to every key `rounds` times, one flushed round at a time.
void PushRounds(PsClient& client, const std::vector<uint64_t>& keys,
                int rounds) {
  for (int r = 0; r < rounds; ++r) PushShows(client, keys, 0);
}

// A client whose map has pservers 0 and 1 the wrong way round (as after two
// pods came back at each other's addresses) is refused by both, fetches the
// coordinator's map and then pushes and pulls exactly.
TEST_P(PserverTest, StaleMapIsRefusedAndTheNewerOneFetched) {
  PsClientOptions o = ClientOptions();
  o.shard_map.addresses = {addresses_[1], addresses_[0]};
  std::atomic<int> fetches{0};
  ShardMap current = InitialShardMap(kShards, addresses_);
  current.version = 2;
  o.fetch_shard_map = [&]() -> absl::StatusOr<ShardMap> {
    fetches.fetch_add(1);
    return current;
  };
  o.writer_id = 7;
  const double refreshes_before = GetMapRefreshCounter()->Value();
  auto client = PsClient::Create(o);
  const std::vector<uint64_t> keys = KeysOnBoth(8, 20);
  PushRounds(*client, keys, 3);
  EXPECT_EQ(PullAll(*client, keys), std::vector<float>(keys.size(), 3.0f));
  EXPECT_GE(fetches.load(), 1);
  EXPECT_EQ(client->Stats().map_refreshes, 1u);
  EXPECT_EQ(GetMapRefreshCounter()->Value() - refreshes_before, 1.0);
  // Without a map to fetch, the same client fails (does not guess).
  o.fetch_shard_map = nullptr;
  o.retry_timeout = absl::Milliseconds(300);
  auto stale = PsClient::Create(o);
  std::vector<float> rows(keys.size());
  absl::Status s = stale->Pull(keys, false, rows.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "is not owned by")) << s;
}

// A pserver that comes back on another port (a rescheduled pod) is followed
// once the coordinator's map says where: pushes queued meanwhile arrive
// exactly once.
TEST_P(PserverTest, PserverBackAtAnotherAddressIsFollowed) {
  PsClientOptions o = ClientOptions();
  o.deadline = absl::Milliseconds(300);
  o.retry_timeout = absl::Seconds(20);
  o.min_map_refresh = absl::Milliseconds(50);
  std::mutex mu;
  ShardMap coordinator = InitialShardMap(kShards, addresses_);
  o.fetch_shard_map = [&]() -> absl::StatusOr<ShardMap> {
    std::lock_guard<std::mutex> lock(mu);
    return coordinator;
  };
  o.writer_id = 8;
  auto client = PsClient::Create(o);
  const std::vector<uint64_t> keys = KeysOnBoth(9, 20);
  PushRounds(*client, keys, 2);
  // Pserver 1 goes away with its rows (a memory table: it comes back empty,
  // so only pushes after this point count there).
  servers_[1]->Shutdown();
  pservers_[1]->Stop();
  absl::Notification pushed;
  std::thread pusher([&] {
    PushRounds(*client, keys, 3);
    pushed.Notify();
  });
  EXPECT_FALSE(pushed.WaitForNotificationWithTimeout(absl::Milliseconds(500)));
  const int port = StartPserver(1, "127.0.0.1:0");
  ASSERT_NE(port, 0);
  ASSERT_NE("127.0.0.1:" + std::to_string(port), addresses_[1]);
  {
    std::lock_guard<std::mutex> lock(mu);
    coordinator.addresses[1] = "127.0.0.1:" + std::to_string(port);
    ++coordinator.version;
  }
  pusher.join();
  std::vector<float> rows = PullAll(*client, keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    const bool on_0 = PserverOfShard(ShardOf(keys[i], kShards), 2) == 0;
    EXPECT_EQ(rows[i], on_0 ? 5.0f : 3.0f) << i;
  }
  EXPECT_EQ(client->Stats().map_refreshes, 1u);
}

INSTANTIATE_TEST_SUITE_P(Threading, PserverTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Inline" : "WorkerPools";
                         });

}  // namespace
}  // namespace sampan
