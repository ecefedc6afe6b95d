// `sampan serve` in-process on a real gRPC port: the same probabilities as
// `sampan eval` for every model kind tested, a version swap under load that
// no call notices, corrupt and half-written versions refused while the old
// one keeps serving, and bad requests answered INVALID_ARGUMENT naming the
// example.
#include "serving/serving.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/config.h"
#include "common/metrics.h"
#include "gtest/gtest.h"
#include "serving/request_batch.h"
#include "serving/serving_testlib.h"
#include "trainer/data/dataset.h"
#include "trainer/data/synthetic.h"
#include "trainer/data_options.h"
#include "trainer/eval_job.h"
#include "trainer/local_job.h"
#include "trainer/model_version.h"
#include "trainer/scoring.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;
using servetest::EvalProbs;
using servetest::FlipByte;
using servetest::MetricValue;
using servetest::OptionsFor;
using servetest::PredictLines;
using servetest::PublishScaled;
using servetest::Server;
using servetest::TestLines;
using servetest::Tmp;
using servetest::TrainTiny;
using serving::PredictRequest;
using serving::PredictResponse;

void ExpectServeEqualsEval(const std::string& model) {
  servetest::ExpectServeEqualsEval(OptionsFor(model));
}

TEST(Serving, LrServesAsEvalScoresWithRareSigns) {
  JobConfig job = TrainTiny("lr", LR, [](JobConfig* c) {
    c->mutable_data()->set_min_feature_count(3);
  });
  ExpectServeEqualsEval(ModelDir(job));
}

TEST(Serving, FmServesAsEvalScores) {
  ExpectServeEqualsEval(ModelDir(TrainTiny("fm", FM)));
}

TEST(Serving, DeepFmWithDenseInputsServesAsEvalScores) {
  JobConfig job = TrainTiny("deepfm", DEEPFM, [](JobConfig* c) {
    c->mutable_data()->set_integer_features(DataConfig::BUCKETS_AND_LOG_DENSE);
  });
  ExpectServeEqualsEval(ModelDir(job));
  // A version of it too, and the same examples already hashed.
  PublishScaled(job, 1, 1.0f);
  ExpectServeEqualsEval(VersionsRoot(job));
  Server server(OptionsFor(VersionsRoot(job)));
  ASSERT_TRUE(server.service().Refresh().ok());
  const std::vector<std::string> lines = TestLines();
  const std::vector<float> want = EvalProbs(VersionsRoot(job));
  PredictRequest request;
  const ParseOptions parse = ParseOptionsFromJob(job);
  for (int i = 0; i < 50; ++i) {
    float label;
    std::vector<uint64_t> signs;
    std::vector<uint16_t> slots;
    std::vector<float> dense;
    ASSERT_TRUE(
        ParseLine(lines[i], parse, &label, &signs, &slots, &dense).ok());
    serving::Example* e = request.add_examples();
    e->mutable_signs()->Add(signs.begin(), signs.end());
    e->mutable_slots()->Add(slots.begin(), slots.end());
    e->mutable_dense()->Add(dense.begin(), dense.end());
  }
  PredictResponse response;
  ASSERT_TRUE(server.Predict(request, &response).ok());
  EXPECT_EQ(response.version(), 1u);
  EXPECT_EQ(response.pass_name(), "20261201/1");
  for (int i = 0; i < 50; ++i) {
    EXPECT_NEAR(response.probabilities(i), want[i], 1e-6) << i;
  }
}

TEST(Serving, DcnV2ServesAsEvalScores) {
  ExpectServeEqualsEval(ModelDir(TrainTiny("dcn", DCN_V2)));
}

// A call's forward pass split across the pool's workers gives the
// caller's own pass's probabilities: DeepFM wide enough to split a
// 100-example call in 4 parts (dense inputs, rare signs), and FM in 2 parts
// of a call of 12,000 examples (its fused per-example path).
void ExpectPoolScoresAsTheCaller(const JobConfig& job, int examples,
                                 int want_parts) {
  absl::StatusOr<std::unique_ptr<ScoringModel>> model =
      LoadScoringModel(ModelDir(job));
  ASSERT_TRUE(model.ok()) << model.status();
  ForkJoinPool pool(4, "test");
  ASSERT_EQ(ScoringParts(*(*model)->model, examples, pool.workers()),
            want_parts);
  const std::vector<std::string> lines = TestLines();
  PredictRequest request;
  for (int i = 0; i < examples; ++i) request.add_lines(lines[i % lines.size()]);
  RequestLimits limits;
  limits.max_examples = size_t(examples);
  limits.max_line_bytes = 4096;
  PredictResponse alone, split;
  ASSERT_TRUE(ScoreRequest(request, **model, limits, &alone).ok());
  ASSERT_TRUE(
      ScoreRequest(request, **model, limits, &split, nullptr, nullptr, &pool)
          .ok());
  ASSERT_EQ(split.probabilities_size(), examples);
  for (int i = 0; i < examples; ++i) {
    ASSERT_NEAR(split.probabilities(i), alone.probabilities(i), 1e-6) << i;
  }
}

TEST(Serving, ForwardPassesSplitAcrossWorkersScoreAsOnePass) {
  JobConfig deepfm = TrainTiny("deepfm-wide", DEEPFM, [](JobConfig* c) {
    c->mutable_model()->clear_hidden();
    c->mutable_model()->add_hidden(400);
    c->mutable_model()->add_hidden(400);
    c->mutable_data()->set_integer_features(DataConfig::BUCKETS_AND_LOG_DENSE);
    c->mutable_data()->set_min_feature_count(2);
  });
  ExpectPoolScoresAsTheCaller(deepfm, 100, 4);
  ExpectServeEqualsEval(ModelDir(deepfm));  // through the server, 1 and 4
  ExpectPoolScoresAsTheCaller(TrainTiny("fm-split", FM), 12000, 2);
}

TEST(Serving, SwapUnderLoadAndRefusedVersions) {
  JobConfig job = TrainTiny("swap", FM);
  const std::string root = VersionsRoot(job);
  PublishScaled(job, 1, 1.0f);
  const std::vector<float> v1 = EvalProbs(VersionDir(root, 1));
  Server server(OptionsFor(root));
  server.service().Start();
  for (int i = 0; i < 500 && !server.service().ready(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(server.service().ready());
  const std::vector<std::string> lines = TestLines();

  // Version 2's answers, from a copy published elsewhere first.
  PublishScaled(job, 2, 0.5f, Tmp() + "/swap-copy");
  const std::vector<std::vector<float>> want = {
      {}, v1, EvalProbs(VersionDir(Tmp() + "/swap-copy", 2))};

  // Clients hammer Predict while version 2 is published and swapped in:
  // every answer is exactly one version's, the one it names.
  std::atomic<bool> stop{false};
  servetest::LoadResult load;
  std::thread clients(
      [&] { load = servetest::RunLoad(&server, want, 4, &stop); });
  absl::SleepFor(absl::Milliseconds(200));
  PublishScaled(job, 2, 0.5f);
  for (int i = 0; i < 500 && server.service().Current()->version != 2; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::SleepFor(absl::Milliseconds(300));
  stop = true;
  clients.join();
  EXPECT_EQ(server.service().Current()->version, 2u);
  EXPECT_EQ(load.failures, 0);
  EXPECT_EQ(load.mixed, 0);
  EXPECT_GT(load.by_version[2], 0);
  EXPECT_GT(load.calls, 20);
  EXPECT_NE(v1[0], want[2][0]);

  // Version 3 with a byte of its part flipped: refused, 2 keeps serving.
  server.service().Stop();
  const double failed_before =
      MetricValue("sampan_serving_version_load_failures_total");
  PublishScaled(job, 3, 2.0f);
  const std::string part = VersionDir(root, 3) + "/sparse-00000.bin";
  FlipByte(part, 40);
  absl::Status refused = server.service().Refresh();
  EXPECT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.message(), "sparse-00000.bin"))
      << refused;
  EXPECT_EQ(server.service().Current()->version, 2u);
  EXPECT_EQ(MetricValue("sampan_serving_version_load_failures_total"),
            failed_before + 1);
  PredictResponse response;
  ASSERT_TRUE(PredictLines(&server, lines, 0, 10, &response).ok());
  EXPECT_EQ(response.version(), 2u);
  EXPECT_NEAR(response.probabilities(3), want[2][3], 1e-6);

  // Version 4 half-written: its staging directory with a part, and LATEST
  // naming a directory that has no VERSION yet.
  fs::create_directories(StagingDir(root, 4));
  fs::copy_file(part, StagingDir(root, 4) + "/sparse-00000.bin");
  fs::create_directories(VersionDir(root, 4));
  fs::copy_file(part, VersionDir(root, 4) + "/sparse-00000.bin");
  { std::ofstream(root + "/LATEST") << "v-000004\n"; }
  EXPECT_FALSE(server.service().Refresh().ok());
  EXPECT_EQ(server.service().Current()->version, 2u);
  ASSERT_TRUE(PredictLines(&server, lines, 0, 10, &response).ok());
  EXPECT_EQ(response.version(), 2u);

  // A good version 5 after them is served.
  fs::remove_all(VersionDir(root, 4));
  PublishScaled(job, 5, 0.25f);
  EXPECT_TRUE(server.service().Refresh().ok());
  ASSERT_TRUE(PredictLines(&server, lines, 0, 10, &response).ok());
  EXPECT_EQ(response.version(), 5u);
  EXPECT_EQ(MetricValue("sampan_serving_model_version"), 5);
  const double age = MetricValue("sampan_serving_model_age_seconds");
  EXPECT_GE(age, 0);
  EXPECT_LT(age, 60);

  // A call pinned to another version than the one served.
  PredictRequest pinned;
  pinned.add_lines(lines[0]);
  pinned.set_version(2);
  EXPECT_EQ(server.Predict(pinned, &response).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

TEST(Serving, PinnedVersionIsServedAlone) {
  JobConfig job = TrainTiny("pinned", LR);
  PublishScaled(job, 1, 1.0f);
  PublishScaled(job, 2, 0.5f);
  ServingOptions options = OptionsFor(VersionsRoot(job));
  options.version = 1;
  Server server(options);
  ASSERT_TRUE(server.service().Refresh().ok());
  EXPECT_EQ(server.service().Current()->version, 1u);
}

// Expects INVALID_ARGUMENT whose message contains `what`.
void ExpectInvalid(Server* server, const PredictRequest& request,
                   const std::string& what) {
  PredictResponse response;
  grpc::Status s = server->Predict(request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
      << what << ": " << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), what)) << s.error_message();
}

TEST(Serving, BadRequestsNameTheExampleAndServingGoesOn) {
  JobConfig job = TrainTiny("bad", DNN, [](JobConfig* c) {
    c->mutable_data()->set_integer_features(DataConfig::LOG_DENSE);
  });
  Server server(OptionsFor(ModelDir(job)));
  PredictRequest request;
  request.add_lines(TestLines()[0]);
  PredictResponse response;
  EXPECT_EQ(server.Predict(request, &response).error_code(),
            grpc::StatusCode::UNAVAILABLE);  // nothing loaded yet
  ASSERT_TRUE(server.service().Refresh().ok());
  const std::vector<std::string> lines = TestLines();

  PredictRequest fields;
  fields.add_lines(lines[0]);
  fields.add_lines(lines[1] + "\textra");
  ExpectInvalid(&server, fields, "example 1: line: expected 40 tab-separated");

  PredictRequest many;
  for (int i = 0; i < 101; ++i) many.add_lines(lines[i]);
  ExpectInvalid(&server, many, "example 100: one too many");

  ExpectInvalid(&server, PredictRequest(), "empty batch");

  PredictRequest oversized;
  oversized.add_lines(lines[0]);
  oversized.add_lines(std::string(5000, 'x'));
  ExpectInvalid(&server, oversized, "example 1: line of 5000 bytes");

  PredictRequest bad_int;
  std::vector<std::string> f = absl::StrSplit(lines[2], '\t');
  f[3] = "abc";
  bad_int.add_lines(absl::StrJoin(f, "\t"));
  ExpectInvalid(&server, bad_int, "example 0: line: field I3");

  PredictRequest non_finite;
  for (int i = 0; i < 3; ++i) {
    serving::Example* e = non_finite.add_examples();
    e->add_signs(42);
    e->add_slots(14);
    for (int j = 0; j < 13; ++j) e->add_dense(0.5f);
  }
  non_finite.mutable_examples(2)->set_dense(
      4, std::numeric_limits<float>::quiet_NaN());
  ExpectInvalid(&server, non_finite, "example 2: dense[4]: expected a finite");

  PredictRequest slot = non_finite;
  slot.mutable_examples(2)->set_dense(4, 1.0f);
  slot.mutable_examples(1)->set_slots(0, 40);
  ExpectInvalid(&server, slot, "example 1: slots[0]: expected a slot in 1..39");

  PredictRequest short_dense = slot;
  short_dense.mutable_examples(1)->set_slots(0, 39);
  short_dense.mutable_examples(0)->mutable_dense()->RemoveLast();
  ExpectInvalid(&server, short_dense, "example 0: dense: expected 13 values");

  PredictRequest both = short_dense;
  both.add_lines(lines[0]);
  ExpectInvalid(&server, both, "not both");

  // The server goes on serving well-formed calls.
  short_dense.mutable_examples(0)->add_dense(0.0f);
  ASSERT_TRUE(server.Predict(short_dense, &response).ok());
  EXPECT_EQ(response.probabilities_size(), 3);
  PredictResponse lines_response;
  ASSERT_TRUE(PredictLines(&server, lines, 0, 100, &lines_response).ok());
  EXPECT_EQ(lines_response.probabilities_size(), 100);
}

}  // namespace
}  // namespace sampan
