#include "cli/plan.h"

#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

PlanInput Trillion() {
  PlanInput in;
  in.rows = 1e12 / 17;  // 10^12 parameters at dim 16
  in.dim = 16;
  in.examples_per_second = 1e6;
  return in;
}

std::string Value(const Plan& plan, const std::string& what) {
  for (const PlanLine& l : plan.lines) {
    if (l.what == what) return l.value;
  }
  return "";
}

TEST(PlanTest, ATrillionParametersNeedsAFleetAndSaysWhy) {
  absl::StatusOr<Plan> plan = MakePlan(Trillion());
  ASSERT_TRUE(plan.ok()) << plan.status();
  // 5.9e10 rows x 20% hot x 108 B x 1.25 = 1.6 TB of hot tier: RAM binds
  // at 256 GiB a node.
  EXPECT_EQ(plan->bound_by, "RAM");
  EXPECT_GE(plan->pservers, 6);
  EXPECT_LE(plan->pservers, 8);
  EXPECT_GE(plan->shards, 8 * plan->pservers);
  EXPECT_GE(plan->trainers, 1);
  EXPECT_NE(Value(*plan, "parameters").find("1 T"), std::string::npos)
      << Value(*plan, "parameters");
  // Every line says where it comes from.
  for (const PlanLine& l : plan->lines) {
    EXPECT_FALSE(l.from.empty()) << l.what;
  }
  const std::string text = FormatPlan(Trillion(), *plan);
  EXPECT_NE(text.find("pserver CPU per request"), std::string::npos);
  EXPECT_NE(text.find("bench/ps_load.sh"), std::string::npos);
}

// INT8 rows shrink v from 64 to 20 B at dim 16: the RAM-bound trillion
// plan needs fewer pservers, by the hot row's bytes (43.6 + 4.03 x v / 4).
TEST(PlanTest, ACompactRowFormatShrinksARamBoundFleet) {
  absl::StatusOr<Plan> fp32 = MakePlan(Trillion());
  PlanInput in = Trillion();
  in.row_format = RowFormat::kInt8;
  absl::StatusOr<Plan> int8 = MakePlan(in);
  ASSERT_TRUE(fp32.ok() && int8.ok());
  EXPECT_EQ(int8->bound_by, "RAM");
  const double ratio = (43.6 + 4.03 * 20 / 4) / (43.6 + 4.03 * 16);
  EXPECT_NEAR(double(int8->pservers) / fp32->pservers, ratio, 0.2);
  EXPECT_LT(int8->pservers, fp32->pservers);
  const std::string text = FormatPlan(in, *int8);
  EXPECT_NE(text.find("dim 16 (INT8)"), std::string::npos);
  // Pulled rows travel compact: 8 B key + w + scale + 16 codes.
  EXPECT_NE(text.find("32 B a key pulled, 76 B pushed"), std::string::npos)
      << text;
}

TEST(PlanTest, EachResourceCanBind) {
  PlanInput in = Trillion();
  in.node_ram_gib = 4096;  // RAM no longer binds: disk does
  absl::StatusOr<Plan> plan = MakePlan(in);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->bound_by, "disk");
  in.node_disk_tib = 1000;
  in.examples_per_second = 1e8;  // CPU
  in.batch_size = 65536;
  in.node_network_gbps = 100;
  plan = MakePlan(in);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->bound_by, "CPU");
  in.node_network_gbps = 10;
  plan = MakePlan(in);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->bound_by, "network");
  // More of what binds, fewer pservers.
  const int before = plan->pservers;
  in.node_network_gbps = 20;
  plan = MakePlan(in);
  ASSERT_TRUE(plan.ok());
  EXPECT_LT(plan->pservers, before);
  // Small batches: each pserver drowns in requests whatever the fleet.
  in.batch_size = 256;
  const absl::Status s = MakePlan(in).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("raise --batch_size"), std::string::npos) << s;
}

TEST(PlanTest, ALatencyWantAddsPservers) {
  PlanInput in;
  in.rows = 1e6;
  in.examples_per_second = 1e4;
  in.batch_size = 8192;  // 160 k keys a batch: one pserver is slow
  absl::StatusOr<Plan> loose = MakePlan(in);
  ASSERT_TRUE(loose.ok());
  EXPECT_EQ(loose->pservers, 1);
  in.pull_p99_ms = 50;
  absl::StatusOr<Plan> tight = MakePlan(in);
  ASSERT_TRUE(tight.ok());
  EXPECT_GT(tight->pservers, 1);
  EXPECT_EQ(tight->bound_by, "the pull p99 wanted");
}

TEST(PlanTest, BadInputIsAnErrorNamingTheFlag) {
  PlanInput in = Trillion();
  in.rows = 0;
  absl::Status s = MakePlan(in).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("--rows"), std::string::npos) << s;
  in = Trillion();
  in.examples_per_second = -5;
  s = MakePlan(in).status();
  EXPECT_NE(s.message().find("--examples_per_second"), std::string::npos) << s;
  in = Trillion();
  in.hot_hits = 1.5;
  s = MakePlan(in).status();
  EXPECT_NE(s.message().find("--hot_hits must be in (0, 1]"), std::string::npos)
      << s;
  in = Trillion();
  in.pull_p99_ms = 1;  // below the measured floor
  s = MakePlan(in).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("below what any fleet gives"), std::string::npos)
      << s;
  EXPECT_FALSE(PredictFleet(0, 2, 2).ok());
}

TEST(PlanTest, AFleetPredictionCostsKeysAndRequests) {
  absl::StatusOr<FleetPrediction> one = PredictFleet(1, 2, 2);
  absl::StatusOr<FleetPrediction> two = PredictFleet(2, 2, 2);
  absl::StatusOr<FleetPrediction> four = PredictFleet(4, 2, 2);
  ASSERT_TRUE(one.ok() && two.ok() && four.ok());
  // More pservers, smaller requests, more CPU per key.
  EXPECT_GT(one->keys_per_second, two->keys_per_second);
  EXPECT_GT(two->keys_per_second, four->keys_per_second);
  // The fit's own figures: 2 cores at 2,048 keys a request.
  const auto& f = PlanFigures();
  double per_key = 0;
  for (const Figure& x : f) {
    const std::string name = x.name;
    if (name == "pserver CPU per key" || name == "client CPU per key") {
      per_key += x.value;
    }
    if (name == "pserver CPU per request" || name == "client CPU per request") {
      per_key += x.value / 2048;
    }
  }
  EXPECT_NEAR(two->keys_per_second, 2 / (per_key / 1e6), 1);
  // Latency is flat over the request sizes measured.
  EXPECT_EQ(one->p99_ms, four->p99_ms);
}

}  // namespace
}  // namespace sampan
