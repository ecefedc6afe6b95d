// The coordinator's membership state: the shard map it hands out and the
// writer ids it issues, through its service methods.
#include "coordinator/coordinator.h"

#include <filesystem>
#include <set>
#include <thread>

#include "gtest/gtest.h"

namespace sampan {
namespace {

JobConfig Job(const std::string& name) {
  JobConfig config;
  const char* tmp = getenv("TEST_TMPDIR");
  config.set_output_dir(std::string(tmp ? tmp : "/tmp") + "/coord-" + name);
  std::filesystem::remove_all(config.output_dir());
  config.mutable_cluster()->set_num_pservers(2);
  config.mutable_cluster()->set_num_trainers(2);
  config.mutable_cluster()->set_heartbeat_timeout_seconds(10);
  config.mutable_table()->set_num_shards(8);
  return config;
}

coord::RegisterResponse Register(coord::Coordinator::Service& service,
                                 coord::Role role, int index,
                                 const std::string& address) {
  grpc::ServerContext context;
  coord::RegisterRequest req;
  req.set_role(role);
  req.set_index(index);
  req.set_address(address);
  coord::RegisterResponse resp;
  EXPECT_TRUE(service.Register(&context, &req, &resp).ok());
  return resp;
}

coord::ShardMap Map(coord::Coordinator::Service& service) {
  grpc::ServerContext context;
  coord::GetClusterSpecRequest req;
  coord::ClusterSpec spec;
  EXPECT_TRUE(service.GetClusterSpec(&context, &req, &spec).ok());
  return spec.shard_map();
}

TEST(CoordinatorTest, ShardMapVersionMovesWithEveryAddressChange) {
  auto service = NewCoordinatorService(Job("map"));
  const coord::ShardMap empty = Map(*service);
  ASSERT_EQ(empty.owner_size(), 8);
  for (int s = 0; s < 8; ++s) EXPECT_EQ(empty.owner(s), uint32_t(s % 2));
  EXPECT_EQ(empty.address(0), "");
  Register(*service, coord::PSERVER, 0, "h:1");
  Register(*service, coord::PSERVER, 1, "h:2");
  const coord::ShardMap first = Map(*service);
  EXPECT_GT(first.version(), empty.version());
  EXPECT_EQ(first.address(1), "h:2");
  // The same address again (a heartbeat's re-registration): no change.
  Register(*service, coord::PSERVER, 1, "h:2");
  EXPECT_EQ(Map(*service).version(), first.version());
  // Back at another port: a newer map says where.
  Register(*service, coord::PSERVER, 1, "h:3");
  const coord::ShardMap moved = Map(*service);
  EXPECT_GT(moved.version(), first.version());
  EXPECT_EQ(moved.address(1), "h:3");
  EXPECT_EQ(moved.address(0), "h:1");
}

// A restarted coordinator's maps are newer than the old one's: clients that
// hold the old one's newest map adopt only newer versions.
TEST(CoordinatorTest, ShardMapVersionsKeepRisingAcrossARestart) {
  const JobConfig job = Job("map-restart");
  uint64_t before = 0;
  {
    auto service = NewCoordinatorService(job);
    Register(*service, coord::PSERVER, 0, "h:1");
    Register(*service, coord::PSERVER, 1, "h:2");
    Register(*service, coord::PSERVER, 1, "h:3");
    before = Map(*service).version();
  }
  auto service = NewCoordinatorService(job);
  Register(*service, coord::PSERVER, 0, "h:1");
  EXPECT_GT(Map(*service).version(), before);
}

bool Found(coord::Coordinator::Service& service, const std::string& key) {
  grpc::ServerContext context;
  coord::KvGetRequest req;
  req.set_key(key);
  coord::KvGetResponse resp;
  EXPECT_TRUE(service.KvGet(&context, &req, &resp).ok());
  return resp.found();
}

// A coordinator restarted with the launch's id finds the keys put and the
// barriers released before: a member retrying its arrival after the restart
// is not left waiting for members that passed long ago.
TEST(CoordinatorTest, RestartWithTheLaunchIdResumesKeysAndBarriers) {
  const JobConfig job = Job("launch");
  {
    auto service = NewCoordinatorService(job, "launch-1");
    grpc::ServerContext put_context;
    coord::KvPutRequest put;
    put.set_key("pass/0");
    put.set_value("day-1");
    coord::KvPutResponse put_resp;
    ASSERT_TRUE(service->KvPut(&put_context, &put, &put_resp).ok());
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r) {
      ranks.emplace_back([&service, r] {
        grpc::ServerContext context;
        coord::BarrierRequest req;
        req.set_name("trained");
        req.set_count(2);
        req.set_index(r);
        coord::BarrierResponse resp;
        EXPECT_TRUE(service->Barrier(&context, &req, &resp).ok());
      });
    }
    for (auto& t : ranks) t.join();
  }
  auto again = NewCoordinatorService(job, "launch-1");
  EXPECT_TRUE(Found(*again, "pass/0"));
  grpc::ServerContext context;
  coord::BarrierRequest req;
  req.set_name("trained");
  req.set_count(2);
  req.set_index(1);  // rank 1 retries alone
  coord::BarrierResponse resp;
  EXPECT_TRUE(again->Barrier(&context, &req, &resp).ok());
  // Another launch in the same output_dir starts afresh.
  auto other = NewCoordinatorService(job, "launch-2");
  EXPECT_FALSE(Found(*other, "pass/0"));
  // Without a launch id nothing is kept.
  auto plain = NewCoordinatorService(job);
  EXPECT_FALSE(Found(*plain, "pass/0"));
}

// Two incarnations of one rank, and every rank, never share a writer id,
// not even across a restart of the coordinator.
TEST(CoordinatorTest, WriterIdsAreNeverReissued) {
  const JobConfig job = Job("writers");
  std::set<uint64_t> seen;
  for (int coordinator = 0; coordinator < 2; ++coordinator) {
    auto service = NewCoordinatorService(job);
    for (int incarnation = 0; incarnation < 3; ++incarnation) {
      for (int rank = 0; rank < 2; ++rank) {
        const uint64_t id =
            Register(*service, coord::TRAINER, rank, "").writer_id();
        EXPECT_NE(id, 0u);
        EXPECT_TRUE(seen.insert(id).second)
            << "writer id " << id << " issued twice (coordinator "
            << coordinator << ", rank " << rank << ")";
      }
    }
  }
  EXPECT_TRUE(std::filesystem::exists(job.output_dir() +
                                      "/checkpoints/coordinator/writer_ids"));
  // Pservers push nothing: no id.
  auto service = NewCoordinatorService(job);
  EXPECT_EQ(Register(*service, coord::PSERVER, 0, "h:1").writer_id(), 0u);
}

}  // namespace
}  // namespace sampan
