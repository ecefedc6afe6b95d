// TLS, mutual TLS and bearer tokens on a real pserver over loopback, with
// certificates made by openssl for this test.
#include "common/security.h"

#include <grpcpp/grpcpp.h>

#include <cstdlib>
#include <cstring>

#include "common/hash.h"
#include "common/test_pki.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pserver/pserver.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

const TestPki& Pki() {
  static const TestPki* pki = new TestPki(
      MakeTestPki(std::string(std::getenv("TEST_TMPDIR")) + "/pki"));
  return *pki;
}

SecurityOptions Secured(bool mutual) { return Pki().Secured(mutual); }

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_FALSE(Pki().dir.empty()); }

  void Serve(const SecurityOptions& options) {
    TableOptions t;
    t.num_shards = 4;
    t.embedding_dim = 0;
    t.rule = OptimizerRule::kSgd;
    t.learning_rate = 1;
    auto table = NewTable(t);
    ASSERT_TRUE(table.ok());
    PserverOptions p;
    p.num_shards = 4;
    pserver_ = Pserver::Create(p, std::move(*table));
    auto creds = MakeServerCredentials(options, "127.0.0.1");
    ASSERT_TRUE(creds.ok()) << creds.status();
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", *creds, &port);
    builder.RegisterService(pserver_->service());
    server_ = builder.BuildAndStart();
    address_ = "localhost:" + std::to_string(port);
  }

  void TearDown() override {
    if (server_) server_->Shutdown();
    if (pserver_) pserver_->Stop();
  }

  // Pushes +1 to key 7 (SGD, lr 1, gradient -1) and returns the status.
  grpc::Status PushOne(std::shared_ptr<grpc::ChannelCredentials> creds) {
    auto stub = ps::SparseTable::NewStub(grpc::CreateChannel(address_, creds));
    ps::PushRequest req;
    req.add_keys(7);
    const float grad = -1;
    req.set_grads(&grad, sizeof grad);
    req.add_shows(1);
    req.add_clicks(0);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(5));
    ps::PushResponse resp;
    return stub->Push(&ctx, req, &resp);
  }

  float ReadKey7() {
    auto creds = MakeChannelCredentials(Secured(mutual_));
    auto stub = ps::SparseTable::NewStub(grpc::CreateChannel(address_, *creds));
    ps::PullRequest req;
    req.add_keys(7);
    grpc::ClientContext ctx;
    ps::PullResponse resp;
    EXPECT_TRUE(stub->Pull(&ctx, req, &resp).ok());
    float w = -1;
    std::memcpy(&w, resp.values().data(), sizeof w);
    return w;
  }

  bool mutual_ = false;
  std::unique_ptr<Pserver> pserver_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(SecurityTest, TokenIsRequiredAndCheckedAndBadCallsChangeNothing) {
  Serve(Secured(false));
  auto good = MakeChannelCredentials(Secured(false));
  ASSERT_TRUE(good.ok()) << good.status();
  ASSERT_TRUE(PushOne(*good).ok());

  SecurityOptions no_token = Secured(false);
  no_token.token_file.clear();
  testing::internal::CaptureStderr();
  grpc::Status s = PushOne(*MakeChannelCredentials(no_token));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "missing bearer token");
  // The server says so in its log (what the job tests grep for).
  EXPECT_THAT(testing::internal::GetCapturedStderr(),
              testing::HasSubstr("refused a call: missing bearer token"));

  SecurityOptions wrong = Secured(false);
  wrong.token_file = Pki().wrong_token;
  s = PushOne(*MakeChannelCredentials(wrong));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(s.error_message(), "wrong bearer token");

  EXPECT_EQ(ReadKey7(), 1.0f);  // only the authenticated push landed
}

TEST_F(SecurityTest, PlaintextClientCannotTalkToTlsServer) {
  Serve(Secured(false));
  grpc::Status s = PushOne(grpc::InsecureChannelCredentials());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_EQ(ReadKey7(), 0.0f);
}

TEST_F(SecurityTest, MutualTlsRejectsClientsWithoutCertificate) {
  mutual_ = true;
  Serve(Secured(true));
  ASSERT_TRUE(PushOne(*MakeChannelCredentials(Secured(true))).ok());
  // TLS and the right token, but no client certificate.
  grpc::Status s = PushOne(*MakeChannelCredentials(Secured(false)));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_EQ(ReadKey7(), 1.0f);
}

TEST(ListenPolicyTest, NonLoopbackNeedsTlsAndTokenOrInsecure) {
  SecurityOptions plain;
  auto refused = MakeServerCredentials(plain, "0.0.0.0");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(MakeServerCredentials(plain, "127.0.0.1").ok());
  plain.insecure = true;
  EXPECT_TRUE(MakeServerCredentials(plain, "0.0.0.0").ok());

  SecurityOptions token_only;
  token_only.token_file = "/nonexistent";
  EXPECT_EQ(MakeChannelCredentials(token_only).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("Bearer abc", "Bearer abc"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abc", "Bearer abd"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer abc", "Bearer ab"));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

}  // namespace
}  // namespace sampan
