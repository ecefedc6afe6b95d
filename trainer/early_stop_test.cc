// EarlyStop against a real coordinator on loopback: two ranks (threads, each
// with its own client) end epochs together, score once each, and read rank
// 0's decisions; a rank repeating an epoch reads the decision without
// scoring; a rank whose peer never comes fails its wait, naming the peer.
#include "trainer/early_stop.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/coordinator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainer/eval/auc.h"

namespace sampan {
namespace {

using ::testing::HasSubstr;

JobConfig Job(const std::string& name, double wait_timeout = 30) {
  JobConfig config;
  const char* tmp = getenv("TEST_TMPDIR");
  config.set_output_dir(std::string(tmp ? tmp : "/tmp") + "/early-" + name);
  std::filesystem::remove_all(config.output_dir());
  config.mutable_cluster()->set_num_pservers(1);
  config.mutable_cluster()->set_num_trainers(2);
  config.mutable_cluster()->set_wait_timeout_seconds(wait_timeout);
  config.mutable_cluster()->set_heartbeat_timeout_seconds(10);
  config.mutable_table()->set_num_shards(4);
  config.mutable_data()->set_epochs(4);
  config.mutable_data()->set_validation_fraction(0.1);
  return config;
}

class Served {
 public:
  explicit Served(const JobConfig& job) : service_(NewCoordinatorService(job)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
  }
  ~Served() {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  std::unique_ptr<CoordinatorService> service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// 100 positives at 0.6; of 100 negatives, auc * 100 at 0.4 and the rest at
// 0.7: a score whose AUC is `auc`.
coord::PassScore ScoreWithAuc(double auc) {
  StreamingAuc a;
  const int below = static_cast<int>(auc * 100 + 0.5);
  for (int i = 0; i < 100; ++i) {
    a.Add(0.6f, 1);
    a.Add(i < below ? 0.4f : 0.7f, 0);
  }
  coord::PassScore s;
  *s.mutable_pos() = {a.positives().begin(), a.positives().end()};
  *s.mutable_neg() = {a.negatives().begin(), a.negatives().end()};
  s.set_rows(200);
  return s;
}

struct Rank {
  Rank(const JobConfig& job, const std::string& address, int rank,
       const std::vector<double>* aucs)
      : client(address, absl::Seconds(2), absl::Seconds(30)) {
    EarlyStopOptions o;
    o.config = &job;
    o.rank = rank;
    o.coordinator = &client;
    o.score = [this, aucs]() -> absl::StatusOr<coord::PassScore> {
      ++scored;
      return ScoreWithAuc((*aucs)[epoch.load()]);
    };
    o.idle = [this] {
      ++idles;
      return absl::OkStatus();
    };
    stop = std::make_unique<EarlyStop>(o);
  }
  CoordinatorClient client;
  std::unique_ptr<EarlyStop> stop;
  std::atomic<uint32_t> epoch{0};
  std::atomic<int> scored{0}, idles{0};
};

TEST(EarlyStopTest, RanksDecideTogetherAndStopWhenTheAucFalls) {
  const JobConfig job = Job("decide");
  Served coordinator(job);
  const std::vector<double> aucs = {0.6, 0.7, 0.65, 0.9};
  Rank r0(job, coordinator.address(), 0, &aucs);
  Rank r1(job, coordinator.address(), 1, &aucs);
  std::vector<bool> stops;
  for (uint32_t e = 0; e < 3; ++e) {
    r0.epoch = r1.epoch = e;
    absl::StatusOr<coord::EpochValidation> d1;
    std::thread t([&] { d1 = r1.stop->EndEpoch(e); });
    absl::StatusOr<coord::EpochValidation> d0 = r0.stop->EndEpoch(e);
    t.join();
    ASSERT_TRUE(d0.ok()) << d0.status();
    ASSERT_TRUE(d1.ok()) << d1.status();
    EXPECT_EQ(d0->SerializeAsString(), d1->SerializeAsString());
    EXPECT_EQ(d0->epoch(), e);
    EXPECT_NEAR(d0->auc(), aucs[e], 1e-9);
    EXPECT_EQ(d0->rows(), 400u);
    stops.push_back(d0->stop());
  }
  EXPECT_EQ(stops, (std::vector<bool>{false, false, true}));
  EXPECT_EQ(r0.scored.load(), 3);
  EXPECT_EQ(r1.scored.load(), 3);

  // Restarted after epoch 2: the epoch is decided; nothing is scored.
  Rank again(job, coordinator.address(), 1, &aucs);
  absl::StatusOr<coord::EpochValidation> d = again.stop->EndEpoch(1);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->stop());
  EXPECT_NEAR(d->auc(), 0.7, 1e-9);
  EXPECT_EQ(again.scored.load(), 0);

  // Rank 0's result lines: the epochs up to the stop.
  const std::string path = job.output_dir() + "/result.txt";
  std::filesystem::create_directories(job.output_dir());
  ASSERT_TRUE(r0.stop->AppendResult(path).ok());
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(text,
            "validation_auc=0.600000,0.700000,0.650000\nepochs_trained=3\n"
            "stopped_early=1\n");
}

// Rank 1 never arrives (it died and was not restarted): rank 0's barrier
// wait runs idle slices, then fails naming it once wait_timeout passed.
TEST(EarlyStopTest, APeerThatNeverComesIsAnError) {
  const JobConfig job = Job("dead", /*wait_timeout=*/2);
  Served coordinator(job);
  const std::vector<double> aucs = {0.6};
  Rank r0(job, coordinator.address(), 0, &aucs);
  ASSERT_TRUE(r0.client.Register(coord::TRAINER, 0, "").ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<coord::EpochValidation> d = r0.stop->EndEpoch(0);
  EXPECT_TRUE(absl::IsDeadlineExceeded(d.status())) << d.status();
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("barrier 'validate-0': trainer 1 has sent no "
                        "heartbeat"));
  EXPECT_GE(absl::Now() - start, absl::Seconds(2));
  EXPECT_GE(r0.idles.load(), 2);
  EXPECT_EQ(r0.scored.load(), 0);
}

}  // namespace
}  // namespace sampan
