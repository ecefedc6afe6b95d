#include "cli/status.h"

#include <string>

#include "cli/job_metrics.h"
#include "common/metrics.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

coord::JobStatusResponse Snapshot(uint64_t examples0, uint64_t examples1,
                                  bool finished) {
  coord::JobStatusResponse s;
  s.set_elapsed_seconds(12);
  coord::ClusterSpec* spec = s.mutable_spec();
  spec->set_num_pservers(1);
  spec->set_num_trainers(2);
  spec->set_complete(true);
  spec->mutable_shard_map()->set_version(3);
  spec->add_pservers()->set_alive(true);
  spec->add_trainers()->set_alive(true);
  spec->add_trainers()->set_alive(false);
  for (uint64_t n : {examples0, examples1}) {
    coord::TrainerProgress* p = s.add_trainers();
    p->set_examples(n);
    p->set_loss_sum(0.5 * n);
    p->set_train_auc(0.75);
    p->set_fraction_done(0.5);
    p->set_finished(finished);
  }
  return s;
}

TEST(StatusTest, ReportsRateStateAndRanks) {
  const std::string out =
      FormatJobStatus("demo", Snapshot(100, 100, false),
                      Snapshot(600, 600, false), absl::Seconds(2));
  EXPECT_NE(out.find("job demo: RUNNING"), std::string::npos) << out;
  EXPECT_NE(out.find("pservers 1/1 alive (shard map version 3), "
                     "trainers 1/2 alive"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("1200 examples, 500 examples/s, loss 0.5000, "
                     "train AUC 0.7500"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("lost"), std::string::npos) << out;
}

TEST(StatusTest, AllRanksFinishedIsFinished) {
  const std::string out = FormatJobStatus(
      "x", Snapshot(5, 5, true), Snapshot(5, 5, true), absl::Seconds(1));
  EXPECT_NE(out.find("FINISHED"), std::string::npos) << out;
}

TEST(StatusTest, SaysWhenTheCoordinatorRestarted) {
  coord::JobStatusResponse now = Snapshot(5, 5, false);
  now.set_coordinator_incarnations(1);
  const std::string once = FormatJobStatus("x", now, now, absl::Seconds(1));
  EXPECT_EQ(once.find("coordinator:"), std::string::npos) << once;
  now.set_coordinator_incarnations(3);
  now.set_coordinator_epoch(77);
  const std::string out = FormatJobStatus("x", now, now, absl::Seconds(1));
  EXPECT_NE(out.find("coordinator: restarted 2 time(s); this one (epoch 77) "
                     "up 12 s"),
            std::string::npos)
      << out;
}

// The value of `name` with label rank=`rank` (or no labels) in the registry.
double MetricValue(const std::string& name, const std::string& rank = "") {
  for (const prometheus::MetricFamily& f : MetricsRegistry().Collect()) {
    if (f.name != name) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      const bool match = rank.empty()
                             ? m.label.empty()
                             : (!m.label.empty() && m.label[0].value == rank);
      if (!match) continue;
      return f.type == prometheus::MetricType::Counter ? m.counter.value
                                                       : m.gauge.value;
    }
  }
  return -1;
}

TEST(JobMetricsTest, CountersFollowHeartbeatsAcrossATrainerRestart) {
  JobMetrics metrics;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  metrics.Update(Snapshot(100, 40, false), t0);
  metrics.Update(Snapshot(300, 40, false), t0 + absl::Seconds(2));
  EXPECT_EQ(MetricValue("sampan_job_examples_total", "0"), 300);
  EXPECT_EQ(MetricValue("sampan_job_examples_per_second"), 100);
  EXPECT_DOUBLE_EQ(MetricValue("sampan_job_train_loss", "0"), 0.5);
  EXPECT_DOUBLE_EQ(MetricValue("sampan_job_train_auc", "1"), 0.75);
  // Rank 0 restarted and counts from zero again: its work still adds up.
  metrics.Update(Snapshot(50, 40, false), t0 + absl::Seconds(3));
  EXPECT_EQ(MetricValue("sampan_job_examples_total", "0"), 350);
  EXPECT_EQ(MetricValue("sampan_job_examples_total", "1"), 40);
}

TEST(JobMetricsTest, CoordinatorRestartsFromItsIncarnations) {
  JobMetrics metrics;
  coord::JobStatusResponse s = Snapshot(1, 1, false);
  s.set_coordinator_incarnations(1);
  metrics.Update(s, absl::FromUnixSeconds(1000));
  EXPECT_EQ(MetricValue("sampan_job_coordinator_restarts"), 0);
  s.set_coordinator_incarnations(4);
  metrics.Update(s, absl::FromUnixSeconds(1001));
  EXPECT_EQ(MetricValue("sampan_job_coordinator_restarts"), 3);
}

TEST(StatusTest, FleetLineFollowsARescale) {
  coord::FleetStatus f;
  EXPECT_EQ(FleetLine(f), "");  // a coordinator from before elasticity
  f.set_size(2);
  f.set_wanted(2);
  EXPECT_EQ(FleetLine(f), "");  // never rescaled
  f.set_size(4);
  f.set_wanted(4);
  f.set_shards_to_move(8);
  f.set_moving("shard 5: pserver 0 -> 2");
  f.set_shards_moved(3);
  f.set_rows_moved(1200);
  f.set_last_error("shard 7: pserver 1 -> 3: ImportShard: unavailable");
  EXPECT_EQ(FleetLine(f),
            "fleet: rescaling to 4 pservers, 8 shards to move (moving shard "
            "5: pserver 0 -> 2); 3 shards (1200 rows) moved so far; last "
            "failed move: shard 7: pserver 1 -> 3: ImportShard: unavailable");
  f.set_shards_to_move(0);
  f.clear_moving();
  f.clear_last_error();
  EXPECT_EQ(FleetLine(f),
            "fleet: 4 pservers; 3 shards (1200 rows) moved so far");
}

TEST(JobMetricsTest, FleetGauges) {
  JobMetrics metrics;
  coord::JobStatusResponse s = Snapshot(1, 1, false);
  s.mutable_fleet()->set_size(4);
  s.mutable_fleet()->set_wanted(2);
  s.mutable_fleet()->set_shards_to_move(16);
  s.mutable_fleet()->set_shards_moved(18);
  s.mutable_fleet()->set_rows_moved(90000);
  metrics.Update(s, absl::FromUnixSeconds(1000));
  EXPECT_EQ(MetricValue("sampan_job_fleet_shards_to_move"), 16);
  EXPECT_EQ(MetricValue("sampan_job_fleet_shards_moved"), 18);
  EXPECT_EQ(MetricValue("sampan_job_fleet_rows_moved"), 90000);
}

}  // namespace
}  // namespace sampan
