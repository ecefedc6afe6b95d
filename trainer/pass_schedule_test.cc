#include "trainer/pass_schedule.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/collective_harness.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

class PassScheduleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::TestCoordinator>> c =
        testing::TestCoordinator::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    coordinator_ = std::move(*c);
    root_ = fs::path(::testing::TempDir()) /
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    fs::create_directories(root_);
    StreamConfig* s = config_.mutable_data()->mutable_stream();
    s->set_root(root_.string());
    s->set_pattern("%Y%m%d/%H");
    s->set_done_marker("_SUCCESS");
    s->set_poll_seconds(0.05);
    s->set_idle_stop_seconds(1);
    config_.mutable_cluster()->set_num_trainers(2);
  }
  void Ready(const std::string& pass) {
    fs::create_directories(root_ / pass);
    std::ofstream(root_ / pass / "part-00000") << "1\n";
    std::ofstream(root_ / pass / "_SUCCESS");
  }
  std::unique_ptr<CoordinatorClient> Client() {
    return std::make_unique<CoordinatorClient>(
        coordinator_->address(), absl::Seconds(5), absl::Seconds(5));
  }
  // The pass names rank `rank` is handed, until the end.
  std::vector<std::string> Drain(int rank) {
    std::unique_ptr<CoordinatorClient> client = Client();
    PassSchedule schedule(config_, rank, client.get(), &stop_);
    std::vector<std::string> names;
    for (int i = 0; i < 100; ++i) {
      absl::StatusOr<coord::StreamPass> p = schedule.Next();
      EXPECT_TRUE(p.ok()) << p.status();
      if (!p.ok() || p->end()) break;
      EXPECT_EQ(p->index(), static_cast<uint64_t>(i));
      EXPECT_EQ(p->first(), i == 0);
      EXPECT_EQ(p->files_size(), 1);
      names.push_back(p->name());
    }
    return names;
  }

  std::unique_ptr<testing::TestCoordinator> coordinator_;
  fs::path root_;
  JobConfig config_;
  std::atomic<bool> stop_{false};
};

TEST_F(PassScheduleTest, EveryRankGetsTheSamePassesInTimeOrder) {
  Ready("20261201/01");
  Ready("20261130/23");
  std::vector<std::string> rank1;
  std::thread other([&] { rank1 = Drain(1); });
  // A pass that becomes ready while rank 0 waits is handed out.
  std::thread late([&] {
    absl::SleepFor(absl::Milliseconds(300));
    Ready("20261201/02");
  });
  const std::vector<std::string> rank0 = Drain(0);
  late.join();
  other.join();
  const std::vector<std::string> want = {"20261130/23", "20261201/01",
                                         "20261201/02"};
  EXPECT_EQ(rank0, want);
  EXPECT_EQ(rank1, want);
}

TEST_F(PassScheduleTest, NoMarkerNeverHandedOutAndLatePassesSkipped) {
  Ready("20261201/05");
  fs::create_directories(root_ / "20261201/06");  // parts, no marker yet
  std::ofstream(root_ / "20261201/06/part-00000") << "1\n";
  std::unique_ptr<CoordinatorClient> client = Client();
  PassSchedule schedule(config_, 0, client.get(), &stop_);
  absl::StatusOr<coord::StreamPass> p = schedule.Next();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name(), "20261201/05");
  Ready("20261201/04");  // before a pass already handed out: late
  p = schedule.Next();
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->end());  // after idle_stop_seconds; 06 has no marker
  EXPECT_EQ(schedule.last(), "20261201/05");
}

TEST_F(PassScheduleTest, EndPassEndsTheStream) {
  Ready("20261201/05");
  Ready("20261201/06");
  config_.mutable_data()->mutable_stream()->set_end_pass("20261201/05");
  config_.mutable_data()->mutable_stream()->set_idle_stop_seconds(0);
  EXPECT_EQ(Drain(0), std::vector<std::string>{"20261201/05"});
}

TEST_F(PassScheduleTest, StopEndsTheWait) {
  config_.mutable_data()->mutable_stream()->set_idle_stop_seconds(0);
  std::unique_ptr<CoordinatorClient> client = Client();
  for (int rank : {0, 1}) {
    PassSchedule schedule(config_, rank, client.get(), &stop_);
    double waiting_since = 0;
    std::thread stopper([&] {
      absl::SleepFor(absl::Milliseconds(1500));
      waiting_since = schedule.waiting_since();
      stop_.store(true);
    });
    absl::StatusOr<coord::StreamPass> p = schedule.Next();
    stopper.join();
    stop_.store(false);
    EXPECT_TRUE(absl::IsCancelled(p.status())) << p.status();
    EXPECT_GT(waiting_since, 0) << "rank " << rank;
    EXPECT_EQ(schedule.waiting_since(), 0) << "rank " << rank;
  }
}

TEST_F(PassScheduleTest, BatchJobIsOnePass) {
  JobConfig batch;
  batch.mutable_data()->add_train_files("a.tsv");
  batch.mutable_data()->set_epochs(3);
  std::unique_ptr<CoordinatorClient> client = Client();
  PassSchedule schedule(batch, 0, client.get(), &stop_);
  absl::StatusOr<coord::StreamPass> p = schedule.Next();
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->end());
  EXPECT_TRUE(p->first());
  const JobConfig pass = PassConfig(batch, *p);
  EXPECT_EQ(pass.data().epochs(), 3u);  // the job's own config
  EXPECT_TRUE(schedule.Next()->end());
}

}  // namespace
}  // namespace sampan
