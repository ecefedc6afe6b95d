// A coordinator's waiting handlers end when their call is cancelled, over a
// real gRPC server on loopback: a member waiting at a barrier that will
// never fill (its peers killed) must not hold up the coordinator's
// shutdown, which a stopped job needs to write its frozen job page.
#include "coordinator/call_wait.h"

#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/coordinator.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"

namespace sampan {
namespace {

JobConfig Job() {
  JobConfig config;
  const char* tmp = std::getenv("TEST_TMPDIR");
  config.set_output_dir(std::string(tmp ? tmp : "/tmp") + "/call-wait");
  std::filesystem::remove_all(config.output_dir());
  config.mutable_cluster()->set_num_pservers(1);
  config.mutable_cluster()->set_num_trainers(2);
  config.mutable_table()->set_num_shards(4);
  return config;
}

// A coordinator on 127.0.0.1, any port.
struct Served {
  Served() : service(NewCoordinatorService(Job(), "launch")) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(service.get());
    server = builder.BuildAndStart();
  }
  std::unique_ptr<CoordinatorService> service;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
};

// Member `index` joins the barrier "trained" of 2 at `address`, waiting up
// to `wait`; returns how the call ended.
grpc::Status JoinBarrier(const std::string& address, int index,
                         absl::Duration wait, grpc::ClientContext* context) {
  auto stub = coord::Coordinator::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  coord::BarrierRequest req;
  req.set_name("trained");
  req.set_count(2);
  req.set_index(index);
  coord::BarrierResponse resp;
  context->set_deadline(absl::ToChronoTime(absl::Now() + wait));
  return stub->Barrier(context, req, &resp);
}

// Member 0 alone, with a 60 s deadline, on its own thread; `status` gets
// how the call ended.
std::thread JoinLonelyBarrier(const std::string& address, grpc::Status* status,
                              grpc::ClientContext* context) {
  return std::thread([address, status, context] {
    *status = JoinBarrier(address, 0, absl::Seconds(60), context);
  });
}

TEST(CallWaitTest, ShutdownIsNotHeldUpByAWaitingBarrier) {
  Served served;
  grpc::Server* server = served.server.get();
  const int port = served.port;
  ASSERT_GT(port, 0);
  grpc::Status status;
  grpc::ClientContext context;
  std::thread member =
      JoinLonelyBarrier(absl::StrCat("127.0.0.1:", port), &status, &context);
  absl::SleepFor(absl::Seconds(1));  // the handler is waiting
  const absl::Time start = absl::Now();
  server->Shutdown(absl::ToChronoTime(start + absl::Milliseconds(200)));
  server->Wait();
  const absl::Duration took = absl::Now() - start;
  member.join();
  // Past the grace period gRPC cancels the call; the handler sees that
  // within kCallCheck. Before, it waited out the call's 60 s deadline.
  EXPECT_LT(took, absl::Seconds(3));
  EXPECT_FALSE(status.ok());
}

TEST(CallWaitTest, ACancelledMemberLeavesAndTheBarrierStillWorks) {
  Served served;
  grpc::Server* server = served.server.get();
  const int port = served.port;
  const std::string address = absl::StrCat("127.0.0.1:", port);
  grpc::Status status;
  grpc::ClientContext context;
  std::thread member = JoinLonelyBarrier(address, &status, &context);
  // Time for the call to reach its handler (on loopback, milliseconds; a
  // cancel before that would cancel a call the barrier never saw).
  absl::SleepFor(absl::Seconds(1));
  context.TryCancel();  // the member dies
  member.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  // Its arrival counts: the second member is released at once.
  grpc::ClientContext second;
  EXPECT_TRUE(JoinBarrier(address, 1, absl::Seconds(5), &second).ok());
  const absl::Time start = absl::Now();
  server->Shutdown(absl::ToChronoTime(start + absl::Milliseconds(200)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

}  // namespace
}  // namespace sampan
