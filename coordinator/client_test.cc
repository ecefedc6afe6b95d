// CoordinatorClient's retried calls against a coordinator that stalls, over
// a real gRPC server on loopback: a stopped coordinator (SIGSTOP, a paused
// node) keeps its connections open and never answers, so each attempt runs
// out its own deadline. A put made during such a stall must succeed once
// the coordinator answers again within wait_timeout, and fail naming the
// call, not hang, when it does not.
#include "coordinator/client.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "proto/coordinator.grpc.pb.h"

namespace sampan {
namespace {

// A coordinator whose KvPut does not answer until `wake` (it stores nothing
// before then), as a stopped process would not.
class StalledCoordinator : public coord::Coordinator::Service {
 public:
  explicit StalledCoordinator(absl::Time wake) : wake_(wake) {}

  grpc::Status KvPut(grpc::ServerContext* context,
                     const coord::KvPutRequest* req,
                     coord::KvPutResponse*) override {
    ++attempts_;
    while (absl::Now() < wake_) {
      if (context->IsCancelled()) {
        return grpc::Status(grpc::StatusCode::CANCELLED, "gone");
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
    absl::MutexLock lock(&mu_);
    stored_[req->key()] = req->value();
    return grpc::Status::OK;
  }

  int attempts() const { return attempts_.load(); }
  std::string Stored(const std::string& key) {
    absl::MutexLock lock(&mu_);
    auto it = stored_.find(key);
    return it == stored_.end() ? "" : it->second;
  }

 private:
  const absl::Time wake_;
  std::atomic<int> attempts_{0};
  absl::Mutex mu_;
  std::map<std::string, std::string> stored_;  // Guarded by mu_.
};

class Served {
 public:
  explicit Served(grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
  }
  ~Served() {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST(CoordinatorClientTest, APutRidesOutAStallLongerThanItsDeadline) {
  StalledCoordinator service(absl::Now() + absl::Milliseconds(1500));
  Served served(&service);
  CoordinatorClient client(served.address(), absl::Milliseconds(300),
                           absl::Seconds(20));
  absl::Status s = client.KvPut("validation/0/0", "0.79");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(service.Stored("validation/0/0"), "0.79");
  // The first attempts ran out their 300 ms while the coordinator slept.
  EXPECT_GE(service.attempts(), 2);
}

TEST(CoordinatorClientTest, AStallPastWaitTimeoutIsAnErrorNamingTheCall) {
  StalledCoordinator service(absl::Now() + absl::Seconds(30));
  Served served(&service);
  CoordinatorClient client(served.address(), absl::Milliseconds(200),
                           absl::Seconds(1));
  const absl::Time start = absl::Now();
  absl::Status s = client.KvPut("validation/0/0", "0.79");
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_NE(s.message().find("KvPut 'validation/0/0'"), std::string::npos) << s;
  // Bounded by wait_timeout (and one backoff), not by the stall.
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_EQ(service.Stored("validation/0/0"), "");
}

}  // namespace
}  // namespace sampan
