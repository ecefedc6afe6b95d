// Sharded serving in-process on real ports: two LookupServices (each
// holding only its shards' rows) behind a PredictService front end answer
// as eval scores, for LR with rare signs and DeepFM with dense inputs over a
// base and a delta; a Lookup names what is wrong with a bad call, and the
// shards count and time every call.
#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "gtest/gtest.h"
#include "serving/lookup_service.h"
#include "serving/serving.h"
#include "serving/serving_testlib.h"
#include "trainer/model_version.h"

namespace sampan {
namespace {

constexpr uint32_t kTableShards = 8;

// Lookup shards 0 and 1 of `root` on loopback ports.
class Shards {
 public:
  Shards(const std::string& root, const std::string& name) {
    for (uint32_t i = 0; i < 2; ++i) {
      LookupOptions o;
      o.serving = servetest::OptionsFor(root);
      o.serving.table_shards = kTableShards;
      o.serving.store_dir =
          absl::StrCat(servetest::Tmp(), "/", name, "-lookup-", i);
      o.serving.memory_budget_bytes = 4 << 20;
      o.shard = i;
      o.shards = 2;
      services_.push_back(std::make_unique<LookupService>(o));
      EXPECT_TRUE(services_.back()->Refresh().ok());
      int port = 0;
      grpc::ServerBuilder builder;
      builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                               &port);
      builder.RegisterService(services_.back().get());
      servers_.push_back(builder.BuildAndStart());
      addresses_.push_back(absl::StrCat("127.0.0.1:", port));
    }
  }
  ~Shards() {
    for (auto& s : servers_) s->Shutdown();
  }
  const std::vector<std::string>& addresses() const { return addresses_; }

 private:
  std::vector<std::unique_ptr<LookupService>> services_;
  std::vector<std::unique_ptr<grpc::Server>> servers_;
  std::vector<std::string> addresses_;
};

ServingOptions FrontEnd(const std::string& root, const Shards& shards) {
  ServingOptions o = servetest::OptionsFor(root);
  o.shard_addresses = shards.addresses();
  o.table_shards = kTableShards;
  o.lookup_deadline = absl::Seconds(2);
  return o;
}

TEST(ShardedServing, LrWithRareSignsServesAsEvalScores) {
  JobConfig job = servetest::TrainTiny("sharded-lr", LR, [](JobConfig* c) {
    c->mutable_data()->set_min_feature_count(3);
  });
  servetest::PublishScaled(job, 1, 1.0f);
  Shards shards(VersionsRoot(job), "lr");
  servetest::ExpectServeEqualsEval(FrontEnd(VersionsRoot(job), shards));
}

TEST(ShardedServing, DeepFmBaseAndDeltaServesAsEvalScores) {
  JobConfig job =
      servetest::TrainTiny("sharded-deepfm", DEEPFM, [](JobConfig* c) {
        c->mutable_data()->set_integer_features(DataConfig::LOG_DENSE);
      });
  servetest::PublishScaled(job, 1, 1.0f);
  servetest::PublishDelta(job, 2, 1, 0.5f);
  Shards shards(VersionsRoot(job), "deepfm");
  servetest::ExpectServeEqualsEval(FrontEnd(VersionsRoot(job), shards));

  // A Lookup of a version the shard lacks, and of another shard's key.
  auto stub = serving::Lookup::NewStub(grpc::CreateChannel(
      shards.addresses()[0], grpc::InsecureChannelCredentials()));
  serving::LookupRequest request;
  serving::LookupResponse response;
  request.set_version(7);
  {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
    grpc::Status s = stub->Lookup(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_TRUE(absl::StrContains(s.error_message(),
                                  "does not hold version 7; it holds 2"))
        << s.error_message();
  }
  request.set_version(2);
  uint64_t key = 1;
  while (PserverOfShard(ShardOf(key, kTableShards), 2) != 1) ++key;
  request.add_keys(key);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  grpc::Status s = stub->Lookup(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "belongs to lookup shard 1"))
      << s.error_message();

  // Every call above was counted by method and code, and timed.
  using servetest::MetricValue;
  const std::string calls = "sampan_serving_lookup_requests_total";
  EXPECT_GT(MetricValue(calls, {{"method", "Lookup"}, {"code", "OK"}}), 0);
  EXPECT_GE(MetricValue(
                calls, {{"method", "Lookup"}, {"code", "FAILED_PRECONDITION"}}),
            1);
  EXPECT_GE(
      MetricValue(calls, {{"method", "Lookup"}, {"code", "INVALID_ARGUMENT"}}),
      1);
  EXPECT_GT(MetricValue(calls, {{"method", "Versions"}, {"code", "OK"}}), 0);
  const std::string latency = "sampan_serving_lookup_request_duration_seconds";
  EXPECT_GE(MetricValue(latency, {{"method", "Lookup"}}),
            MetricValue(calls, {{"method", "Lookup"}, {"code", "OK"}}) + 2);
  EXPECT_GT(MetricValue("sampan_serving_lookup_keys_total", {}), 0);
}

}  // namespace
}  // namespace sampan
