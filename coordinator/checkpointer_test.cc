#include "coordinator/checkpointer.h"

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/shard_map.h"
#include "coordinator/checkpoint_store.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/ps.grpc.pb.h"

namespace sampan {
namespace {

// A job of two trainers and no pservers, so that a round needs no RPCs:
// what is left is the protocol (arrivals, finished ranks, timeouts,
// announcements) and the manifest.
JobConfig Job(const char* name, double timeout_seconds) {
  JobConfig config;
  config.set_name(name);
  config.mutable_cluster()->set_num_trainers(2);
  config.mutable_model()->set_type(FM);
  config.mutable_checkpoint()->set_dir(
      std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR")
                                             : "/tmp") +
      "/" + name);
  config.mutable_checkpoint()->set_keep(3);
  config.mutable_checkpoint()->set_timeout_seconds(timeout_seconds);
  std::filesystem::remove_all(config.checkpoint().dir());
  return config;
}

coord::CheckpointArriveResponse Arrive(Checkpointer* c, int rank,
                                       uint64_t offset, bool finished = false,
                                       uint64_t epoch = 0) {
  grpc::ServerContext context;
  coord::CheckpointArriveRequest req;
  req.set_epoch(epoch);
  req.mutable_position()->set_rank(rank);
  req.mutable_position()->set_byte_offset(offset);
  req.mutable_position()->set_finished(finished);
  coord::CheckpointArriveResponse resp;
  EXPECT_TRUE(c->Arrive(&context, req, &resp).ok());
  return resp;
}

std::unique_ptr<Checkpointer> Make(const JobConfig& config) {
  return Checkpointer::Create(config,
                              CheckpointFleet{[] { return ShardMap(); }});
}

TEST(Checkpointer, CompletesWhenEveryTrainerArrived) {
  const JobConfig config = Job("complete", 30);
  auto c = Make(config);
  coord::CheckpointArriveResponse r1;
  std::thread other([&] { r1 = Arrive(c.get(), 1, 222); });
  const coord::CheckpointArriveResponse r0 = Arrive(c.get(), 0, 111);
  other.join();
  EXPECT_TRUE(r0.completed()) << r0.reason();
  EXPECT_TRUE(r1.completed());
  EXPECT_EQ(r0.epoch(), 1u);
  EXPECT_EQ(r1.epoch(), 1u);
  auto m = ReadManifest(CheckpointDir(config.checkpoint().dir(), 1));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->trainers_size(), 2);
  EXPECT_EQ(m->trainers(0).byte_offset(), 111u);
  EXPECT_EQ(m->trainers(1).byte_offset(), 222u);
}

// Pservers whose Checkpoint waits (up to 10 s) until `want` calls are in
// flight at once, and records the most there were.
class GatheringPservers final : public ps::SparseTable::Service {
 public:
  explicit GatheringPservers(int want) : want_(want) {}
  grpc::Status Checkpoint(grpc::ServerContext*, const ps::CheckpointRequest*,
                          ps::CheckpointResponse*) override {
    absl::MutexLock lock(&mu_);
    ++in_flight_;
    most_ = std::max(most_, in_flight_);
    auto all = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return most_ >= want_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(10));
    --in_flight_;
    return grpc::Status::OK;
  }
  int most() {
    absl::MutexLock lock(&mu_);
    return most_;
  }

 private:
  const int want_;
  absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int most_ ABSL_GUARDED_BY(mu_) = 0;
};

// Each pserver snapshots its own disk: a round calls them all at once, so
// the trainers wait for the slowest snapshot, not for their sum.
TEST(Checkpointer, SnapshotsEveryPserverAtOnce) {
  constexpr int kPservers = 4;
  GatheringPservers fake(kPservers);
  grpc::ServerBuilder builder;
  std::vector<int> ports(kPservers, 0);
  for (int& port : ports) {
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
  }
  builder.RegisterService(&fake);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  std::vector<std::string> addresses;
  for (int port : ports) addresses.push_back(absl::StrCat("127.0.0.1:", port));
  const ShardMap map = InitialShardMap(8, addresses);
  const JobConfig config = Job("parallel", 30);
  auto c = Checkpointer::Create(config, CheckpointFleet{[&] { return map; }});
  coord::CheckpointArriveResponse r1;
  std::thread other([&] { r1 = Arrive(c.get(), 1, 222); });
  const coord::CheckpointArriveResponse r0 = Arrive(c.get(), 0, 111);
  other.join();
  EXPECT_TRUE(r0.completed()) << r0.reason();
  EXPECT_EQ(fake.most(), kPservers);
  auto m = ReadManifest(CheckpointDir(config.checkpoint().dir(), 1));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->num_pservers(), static_cast<uint32_t>(kPservers));
  server->Shutdown();
}

// A pserver restarted during a round registers on another port: the round's
// retries follow the fleet's map to it instead of calling the dead address
// until the round's timeout abandons it.
TEST(Checkpointer, FollowsARestartedPserverToItsNewAddress) {
  GatheringPservers fake(1);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&fake);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  // Port 1 refuses connections: the address the round begins with.
  const ShardMap before = InitialShardMap(4, {"127.0.0.1:1"});
  const ShardMap after = InitialShardMap(4, {absl::StrCat("127.0.0.1:", port)});
  absl::Mutex mu;
  int calls = 0;
  const JobConfig config = Job("restarted", 30);
  auto c = Checkpointer::Create(config, CheckpointFleet{[&] {
                                  absl::MutexLock lock(&mu);
                                  return calls++ == 0 ? before : after;
                                }});
  coord::CheckpointArriveResponse r1;
  std::thread other([&] { r1 = Arrive(c.get(), 1, 222); });
  const absl::Time start = absl::Now();
  const coord::CheckpointArriveResponse r0 = Arrive(c.get(), 0, 111);
  other.join();
  EXPECT_TRUE(r0.completed()) << r0.reason();
  EXPECT_EQ(fake.most(), 1);
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  server->Shutdown();
}

TEST(Checkpointer, AbandonsWhenATrainerStaysAway) {
  const JobConfig config = Job("abandon", 0.3);
  auto c = Make(config);
  const coord::CheckpointArriveResponse r = Arrive(c.get(), 0, 1);
  EXPECT_FALSE(r.completed());
  EXPECT_NE(r.reason().find("only 1 of 2 trainers arrived"), std::string::npos)
      << r.reason();
  EXPECT_FALSE(std::filesystem::exists(
      CheckpointDir(config.checkpoint().dir(), r.epoch())));
  // The next round takes the next epoch.
  coord::CheckpointArriveResponse r1;
  std::thread other([&] { r1 = Arrive(c.get(), 1, 2); });
  EXPECT_EQ(Arrive(c.get(), 0, 3).epoch(), r.epoch() + 1);
  other.join();
}

TEST(Checkpointer, FinishedTrainerCountsAsArrived) {
  const JobConfig config = Job("finished", 30);
  auto c = Make(config);
  Arrive(c.get(), 1, 999, /*finished=*/true);
  const coord::CheckpointArriveResponse r = Arrive(c.get(), 0, 5);
  EXPECT_TRUE(r.completed()) << r.reason();
  auto m = ReadManifest(CheckpointDir(config.checkpoint().dir(), r.epoch()));
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->trainers_size(), 2);
  EXPECT_TRUE(m->trainers(1).finished());
}

// A hybrid round needs rank 0's dense state; one that every rank reached
// finished (and so saved none) must not become the checkpoint a resume
// would restore without dense weights.
TEST(Checkpointer, HybridRoundWithoutDenseStateIsAbandoned) {
  JobConfig config = Job("hybrid-finished", 30);
  config.mutable_model()->set_type(DNN);
  auto c = Make(config);
  coord::CheckpointArriveResponse r0;
  std::thread other([&] { r0 = Arrive(c.get(), 0, 7); });
  Arrive(c.get(), 1, 9, /*finished=*/true);
  other.join();
  EXPECT_FALSE(r0.completed());
  EXPECT_NE(r0.reason().find("no dense state"), std::string::npos)
      << r0.reason();
  EXPECT_FALSE(std::filesystem::exists(
      CheckpointDir(config.checkpoint().dir(), r0.epoch())));
}

TEST(Checkpointer, HeartbeatsAnnounceTimedEpochsAndEpochsContinueOnDisk) {
  JobConfig config = Job("timed", 30);
  config.mutable_checkpoint()->set_every_seconds(0.001);
  std::filesystem::create_directories(
      CheckpointDir(config.checkpoint().dir(), 6));  // from an earlier run
  auto c = Make(config);
  absl::SleepFor(absl::Milliseconds(5));
  coord::HeartbeatRequest hb;
  hb.set_role(coord::TRAINER);
  coord::HeartbeatResponse resp;
  c->OnHeartbeat(hb, &resp);
  EXPECT_EQ(resp.checkpoint_epoch(), 7u);
  EXPECT_EQ(resp.checkpoint_at_step(), 0u);  // not hybrid: next boundary
  // An arrival for an epoch that is no longer pending returns at once.
  const coord::CheckpointArriveResponse stale = Arrive(c.get(), 0, 1, false, 3);
  EXPECT_FALSE(stale.completed());
}

}  // namespace
}  // namespace sampan
