#include "cli/progress.h"

#include "absl/time/clock.h"
#include "cli/coordinator_outages.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

coord::JobStatusResponse Status(uint64_t examples, double loss_sum,
                                double fraction) {
  coord::JobStatusResponse s;
  coord::TrainerProgress* t = s.add_trainers();
  t->set_examples(examples);
  t->set_loss_sum(loss_sum);
  t->set_train_auc(0.75);
  t->set_fraction_done(fraction);
  return s;
}

TEST(ProgressTest, RateAndLossAreOverTheExamplesSinceTheLastLine) {
  ProgressPrinter p{JobConfig()};
  const absl::Time t0 = absl::Now();
  p.Render(Status(0, 0, 0), t0);
  const std::string line =
      p.Render(Status(1000, 500, 0.5), t0 + absl::Seconds(1));
  EXPECT_NE(
      line.find(" 50.0% |     1000 examples/s | loss 0.5000 | auc 0.7500"),
      std::string::npos)
      << line;
  EXPECT_NE(line.find("eta 0:01"), std::string::npos) << line;
}

TEST(ProgressTest, SaysWhenTheCoordinatorRestarted) {
  ProgressPrinter p{JobConfig()};
  coord::JobStatusResponse s = Status(10, 5, 0.1);
  s.set_coordinator_incarnations(1);
  EXPECT_EQ(p.Render(s, absl::Now()).find("coordinator"), std::string::npos);
  s.set_coordinator_incarnations(3);
  const std::string line = p.Render(s, absl::Now());
  EXPECT_NE(line.find(" | coordinator restarts 2"), std::string::npos) << line;
}

TEST(ProgressTest, NoNewExamplesKeepsTheLastLossAndAFinishedJobItsAverage) {
  ProgressPrinter p{JobConfig()};
  const absl::Time t0 = absl::Now();
  p.Render(Status(0, 0, 0), t0);
  p.Render(Status(1000, 400, 0.5), t0 + absl::Seconds(1));
  // A stall: nothing trained, the rate is 0 but the loss is not.
  std::string line = p.Render(Status(1000, 400, 0.5), t0 + absl::Seconds(2));
  EXPECT_NE(line.find("       0 examples/s | loss 0.4000"), std::string::npos)
      << line;
  // Done: the job's average rate up to when it finished (2000 examples in
  // 3 s), on this line and every later one, not the last interval's or 0.
  line = p.Render(Status(2000, 900, 1.0), t0 + absl::Seconds(3));
  EXPECT_NE(line.find("100.0% |      667 examples/s | loss 0.5000"),
            std::string::npos)
      << line;
  EXPECT_EQ(p.Render(Status(2000, 900, 1.0), t0 + absl::Seconds(5)), line);
}

// `make demo` once ended with two 100% lines of different rates.
TEST(ProgressTest, AFinishedJobsLineIsPrintedOnce) {
  ProgressPrinter p{JobConfig()};
  testing::internal::CaptureStdout();
  p.Update(Status(0, 0, 0));
  absl::SleepFor(absl::Milliseconds(10));
  p.Update(Status(1000, 500, 0.5));
  p.Update(Status(2000, 900, 1.0));
  p.Update(Status(2000, 900, 1.0));
  p.Finish();
  const std::string out = testing::internal::GetCapturedStdout();
  size_t done = 0;
  for (size_t at = out.find("100.0%"); at != std::string::npos;
       at = out.find("100.0%", at + 1)) {
    ++done;
  }
  EXPECT_EQ(done, 1u) << out;
}

// The launcher's account of coordinator outages (cli/coordinator_outages.h).
TEST(CoordinatorOutagesTest, FromDeathOrFirstUnansweredCallToNextAnswer) {
  CoordinatorOutages outages;
  const absl::Time t = absl::FromUnixSeconds(100);
  EXPECT_EQ(outages.Called(true, t), absl::ZeroDuration());
  EXPECT_FALSE(outages.out());
  outages.Died(t);  // the launcher restarts it
  EXPECT_TRUE(outages.out());
  EXPECT_EQ(outages.Called(false, t + absl::Seconds(1)), absl::ZeroDuration());
  EXPECT_EQ(outages.Called(true, t + absl::Seconds(3)), absl::Seconds(3));
  EXPECT_FALSE(outages.out());
  // A stopped coordinator: from the first call it did not answer.
  EXPECT_EQ(outages.Called(false, t + absl::Seconds(10)), absl::ZeroDuration());
  EXPECT_EQ(outages.Called(true, t + absl::Seconds(10.5)),
            absl::Milliseconds(500));
  EXPECT_EQ(outages.count(), 2);
  EXPECT_EQ(outages.total(), absl::Milliseconds(3500));
}

}  // namespace
}  // namespace sampan
