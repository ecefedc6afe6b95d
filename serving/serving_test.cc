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
#include "trainer/data/dataset.h"
#include "trainer/data/synthetic.h"
#include "trainer/data_options.h"
#include "trainer/eval_job.h"
#include "trainer/local_job.h"
#include "trainer/model_version.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;
using serving::PredictRequest;
using serving::PredictResponse;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

// Synthetic train.tsv / test.tsv under `dir` (once per directory).
void GenerateData(const std::string& dir) {
  if (fs::exists(dir + "/test.tsv")) return;
  fs::create_directories(dir);
  SyntheticOptions synthetic;
  synthetic.rows = 4000;
  synthetic.seed = 11;
  synthetic.test_fraction = 0.1;
  ASSERT_TRUE(
      GenerateCriteoData(synthetic, dir + "/train.tsv", dir + "/test.tsv", "")
          .ok());
}

// Trains a tiny model of `type` with train-local; returns its job.
JobConfig TrainTiny(const std::string& name, ModelType type,
                    void (*tweak)(JobConfig*) = nullptr) {
  const std::string data = Tmp() + "/data";
  GenerateData(data);
  JobConfig config = DefaultJobConfig();
  config.set_name(name);
  config.set_output_dir(Tmp() + "/" + name);
  config.mutable_model()->set_type(type);
  config.mutable_model()->set_embedding_dim(4);
  config.mutable_model()->clear_hidden();
  config.mutable_model()->add_hidden(8);
  config.mutable_model()->set_cross_layers(1);
  config.mutable_cluster()->set_threads_per_trainer(1);
  config.mutable_data()->mutable_synthetic()->set_rows(0);
  config.mutable_data()->add_train_files(data + "/train.tsv");
  config.mutable_data()->add_test_files(data + "/test.tsv");
  if (tweak != nullptr) tweak(&config);
  absl::Status s = TrainLocalJob(config);
  EXPECT_TRUE(s.ok()) << s;
  return config;
}

std::vector<std::string> TestLines() {
  std::ifstream in(Tmp() + "/data/test.tsv");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Publishes the exported model of `job` as base `version` under `root`
// (default its versions root), every row and dense weight times `scale`.
void PublishScaled(const JobConfig& job, uint64_t version, float scale,
                   std::string root = "") {
  absl::StatusOr<std::unique_ptr<ScoringModel>> m =
      LoadScoringModel(ModelDir(job));
  ASSERT_TRUE(m.ok()) << m.status();
  const SparseRows& sparse = (*m)->loaded.sparse;
  if (root.empty()) root = VersionsRoot(job);
  ASSERT_TRUE(ClearStaging(root, version).ok());
  std::vector<uint64_t> keys;
  for (const auto& entry : sparse.index) keys.push_back(entry.first);
  const int d = sparse.row_dim;
  RowReader read = [&](absl::Span<const uint64_t> ks, float* out) {
    for (uint64_t key : ks) {
      const float* row = sparse.rows.data() + size_t(sparse.index.at(key)) * d;
      for (int j = 0; j < d; ++j) *out++ = row[j] * scale;
    }
    return absl::OkStatus();
  };
  ASSERT_TRUE(
      ExportSparsePart(StagingDir(root, version), 0, keys, d, read).ok());
  DenseModelState dense = (*m)->dense;
  for (float& w : dense.weights) w *= scale;
  ASSERT_TRUE(SaveDenseModel(DenseModelPath(StagingDir(root, version)),
                             *(*m)->model, dense)
                  .ok());
  VersionInfo info;
  info.version = version;
  info.base = true;
  info.base_version = version;
  info.pass = absl::StrCat("20261201/", version);
  ASSERT_TRUE(
      PublishVersion(root, (*m)->loaded.config, ModelManifest(), info, 0).ok());
}

// Eval's probability of every test line for `model`.
std::vector<float> EvalProbs(const std::string& model) {
  std::vector<float> probs;
  absl::StatusOr<EvalMetrics> m =
      EvaluateModel(model, Tmp() + "/data/test.tsv", nullptr, &probs);
  EXPECT_TRUE(m.ok()) << m.status();
  return probs;
}

// A PredictService on a real loopback port.
class Server {
 public:
  explicit Server(const ServingOptions& options) : service_(options) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_),
                                   grpc::InsecureChannelCredentials());
  }
  ~Server() {
    server_->Shutdown();
    service_.Stop();
  }
  PredictService& service() { return service_; }

  grpc::Status Predict(const PredictRequest& request,
                       PredictResponse* response) {
    auto stub = serving::Predictor::NewStub(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(10));
    return stub->Predict(&context, request, response);
  }

 private:
  PredictService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

ServingOptions OptionsFor(const std::string& model) {
  ServingOptions o;
  o.model = model;
  o.poll = absl::Milliseconds(20);
  o.max_examples_per_request = 100;
  o.max_line_bytes = 4096;
  return o;
}

// Serves `model` and asks for every test line, 100 at a time.
void ExpectServeEqualsEval(const std::string& model) {
  Server server(OptionsFor(model));
  ASSERT_TRUE(server.service().Refresh().ok());
  const std::vector<std::string> lines = TestLines();
  const std::vector<float> want = EvalProbs(model);
  ASSERT_EQ(want.size(), lines.size());
  ASSERT_GT(lines.size(), 300u);
  for (size_t begin = 0; begin < lines.size(); begin += 100) {
    PredictRequest request;
    for (size_t i = begin; i < std::min(lines.size(), begin + 100); ++i) {
      // Every other line without its label: both forms are accepted.
      request.add_lines(i % 2 ? lines[i].substr(lines[i].find('\t') + 1)
                              : lines[i]);
    }
    PredictResponse response;
    grpc::Status s = server.Predict(request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(response.probabilities_size(), request.lines_size());
    for (int i = 0; i < response.probabilities_size(); ++i) {
      ASSERT_NEAR(response.probabilities(i), want[begin + i], 1e-6)
          << model << " line " << begin + i;
    }
  }
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

double MetricValue(const std::string& name) {
  for (const auto& family : MetricsRegistry().Collect()) {
    if (family.name != name || family.metric.empty()) continue;
    return family.metric[0].counter.value + family.metric[0].gauge.value;
  }
  return -1;
}

grpc::Status PredictLines(Server* server, const std::vector<std::string>& lines,
                          size_t begin, size_t n, PredictResponse* response) {
  PredictRequest request;
  for (size_t i = begin; i < begin + n; ++i) request.add_lines(lines[i]);
  return server->Predict(request, response);
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
  std::atomic<int> failures{0}, mixed{0}, calls{0}, v2_calls{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&, t] {
      size_t begin = t * 37 % 200;
      while (!stop) {
        PredictResponse response;
        grpc::Status s = PredictLines(&server, lines, begin, 50, &response);
        ++calls;
        if (!s.ok()) {
          ++failures;
          continue;
        }
        const uint64_t v = response.version();
        if (v != 1 && v != 2) {
          ++mixed;
          continue;
        }
        if (v == 2) ++v2_calls;
        for (int i = 0; i < 50; ++i) {
          if (std::abs(response.probabilities(i) - want[v][begin + i]) > 1e-6) {
            ++mixed;
            break;
          }
        }
        begin = (begin + 50) % 200;
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(200));
  PublishScaled(job, 2, 0.5f);
  for (int i = 0; i < 500 && server.service().Current()->version != 2; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::SleepFor(absl::Milliseconds(300));
  stop = true;
  for (auto& c : clients) c.join();
  EXPECT_EQ(server.service().Current()->version, 2u);
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(mixed, 0);
  EXPECT_GT(v2_calls, 0);
  EXPECT_GT(calls, 20);
  EXPECT_NE(v1[0], want[2][0]);

  // Version 3 with a byte of its part flipped: refused, 2 keeps serving.
  server.service().Stop();
  const double failed_before =
      MetricValue("sampan_serving_version_load_failures_total");
  PublishScaled(job, 3, 2.0f);
  const std::string part = VersionDir(root, 3) + "/sparse-00000.bin";
  {
    std::fstream f(part, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    char c = 0;
    f.read(&c, 1);
    f.seekp(40);
    c ^= 0x5a;
    f.write(&c, 1);
  }
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
