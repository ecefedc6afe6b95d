// Fencing a replaced coordinator (common/coordinator_epoch.h), over real
// gRPC servers on loopback: a coordinator that was stopped while a newer one
// took over, then woke up on the same address, must not act.
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/coordinator_epoch.h"
#include "coordinator/client.h"
#include "coordinator/coordinator.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

JobConfig Job(const std::string& name) {
  JobConfig config;
  const char* tmp = getenv("TEST_TMPDIR");
  config.set_output_dir(std::string(tmp ? tmp : "/tmp") + "/fence-" + name);
  std::filesystem::remove_all(config.output_dir());
  config.mutable_cluster()->set_num_pservers(1);
  config.mutable_cluster()->set_num_trainers(1);
  config.mutable_table()->set_num_shards(4);
  return config;
}

// Serves `service` on 127.0.0.1:`port` (0: any) until destroyed.
class Served {
 public:
  Served(grpc::Service* service, int port) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port),
                             grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
  }
  ~Served() {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }
  int port() const { return port_; }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

coord::CoordinatorState StateOnDisk(const JobConfig& job) {
  std::ifstream in(job.output_dir() + "/checkpoints/coordinator/state.pb",
                   std::ios::binary);
  coord::CoordinatorState state;
  EXPECT_TRUE(state.ParseFromIstream(&in));
  return state;
}

TEST(FenceTest, ReplacedCoordinatorThatWakesUpStopsActing) {
  const JobConfig job = Job("wake");
  auto old_one = NewCoordinatorService(job, "launch");
  int port = 0;
  std::unique_ptr<CoordinatorClient> client;
  {
    Served served(old_one.get(), 0);
    port = served.port();
    client = std::make_unique<CoordinatorClient>(
        served.address(), absl::Seconds(1), absl::Seconds(2));
    ASSERT_TRUE(client->KvPut("a", "1").ok());
    EXPECT_EQ(client->newest_epoch(), old_one->epoch());
  }  // the old one stops answering (as if SIGSTOPped)
  auto new_one = NewCoordinatorService(job, "launch");
  EXPECT_GT(new_one->epoch(), old_one->epoch());
  {
    Served served(new_one.get(), port);  // behind the same address
    ASSERT_EQ(served.port(), port);
    absl::StatusOr<std::string> a = client->KvGet("a", false, absl::Seconds(1));
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(*a, "1");
    EXPECT_EQ(client->newest_epoch(), new_one->epoch());
    ASSERT_TRUE(client->KvPut("b", "2").ok());
  }
  // The old one wakes up where the new one was: the member's call carries
  // the new epoch, so the old coordinator supersedes itself and refuses.
  Served woken(old_one.get(), port);
  ASSERT_EQ(woken.port(), port);
  absl::Status put = client->KvPut("c", "3");
  EXPECT_EQ(put.code(), absl::StatusCode::kUnavailable) << put;
  EXPECT_NE(put.message().find("replaced"), std::string::npos) << put;
  EXPECT_TRUE(old_one->superseded());
  // Nothing it held in memory went to disk: the new one's state stands.
  const coord::CoordinatorState state = StateOnDisk(job);
  EXPECT_EQ(state.coordinator_epoch(), new_one->epoch());
  EXPECT_EQ(state.kv().count("b"), 1u);
  EXPECT_EQ(state.kv().count("c"), 0u);
  EXPECT_EQ(state.incarnations(), 2u);
}

TEST(FenceTest, ReplacedCoordinatorFindsTheNewerStateAndWritesNothing) {
  const JobConfig job = Job("state");
  auto old_one = NewCoordinatorService(job, "launch");
  auto new_one = NewCoordinatorService(job, "launch");  // took over
  Served woken(old_one.get(), 0);
  // A member that never met the new coordinator: only the state file tells
  // the old one that it was replaced.
  CoordinatorClient fresh(woken.address(), absl::Seconds(1), absl::Seconds(1));
  absl::Status put = fresh.KvPut("x", "1");
  EXPECT_EQ(put.code(), absl::StatusCode::kUnavailable) << put;
  EXPECT_TRUE(old_one->superseded());
  EXPECT_EQ(StateOnDisk(job).kv().count("x"), 0u);
  // Every other call is refused too, and says why.
  absl::Status reg = fresh.Register(coord::TRAINER, 0, "");
  EXPECT_NE(reg.message().find("replaced by a newer coordinator"),
            std::string::npos)
      << reg;
  EXPECT_FALSE(new_one->superseded());
}

// An old coordinator that does not fence itself (one built before fencing,
// or any answer racing a takeover): it answers with its own, older epoch.
class UnfencedOldCoordinator final : public coord::Coordinator::Service {
 public:
  grpc::Status KvGet(grpc::ServerContext* context, const coord::KvGetRequest*,
                     coord::KvGetResponse* resp) override {
    context->AddInitialMetadata(kCoordinatorEpochKey, "1");
    resp->set_found(true);
    resp->set_value("stale");
    return grpc::Status::OK;
  }
};

TEST(FenceTest, AnswerFromAnOlderEpochIsNotTaken) {
  const JobConfig job = Job("answer");
  auto current = NewCoordinatorService(job);
  ASSERT_GT(current->epoch(), 1u);
  int port = 0;
  std::unique_ptr<CoordinatorClient> client;
  {
    Served served(current.get(), 0);
    port = served.port();
    client = std::make_unique<CoordinatorClient>(
        served.address(), absl::Seconds(1), absl::Seconds(1));
    ASSERT_TRUE(client->KvPut("k", "v").ok());
    EXPECT_EQ(client->newest_epoch(), current->epoch());
  }
  UnfencedOldCoordinator old_one;
  Served woken(&old_one, port);
  ASSERT_EQ(woken.port(), port);
  absl::StatusOr<std::string> got = client->KvGet("k", false, absl::Seconds(1));
  ASSERT_FALSE(got.ok()) << *got;
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("not taken"), std::string::npos)
      << got.status();
  EXPECT_EQ(client->newest_epoch(), current->epoch());
}

}  // namespace
}  // namespace sampan
