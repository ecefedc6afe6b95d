#include "serving/serving_testlib.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/config.h"
#include "common/metrics.h"
#include "gtest/gtest.h"
#include "trainer/data/synthetic.h"
#include "trainer/eval_job.h"
#include "trainer/local_job.h"
#include "trainer/model_version.h"

namespace sampan {
namespace servetest {

namespace fs = std::filesystem;
using serving::PredictRequest;
using serving::PredictResponse;

std::string Tmp() { return std::getenv("TEST_TMPDIR"); }

namespace {

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

}  // namespace

JobConfig TrainTiny(const std::string& name, ModelType type,
                    void (*tweak)(JobConfig*)) {
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

namespace {

// Publishes version `version` (a base when base == version) under `root`
// (default the job's versions root) from the exported model of `job`: the
// rows of the keys `scale_of` does not map to NaN, each times its
// scale_of(key) (0: a deletion), dense weights times `dense_scale`.
void PublishFrom(const JobConfig& job, uint64_t version, uint64_t base,
                 std::string root,
                 const std::function<float(uint64_t)>& scale_of,
                 float dense_scale) {
  absl::StatusOr<std::unique_ptr<ScoringModel>> m =
      LoadScoringModel(ModelDir(job));
  ASSERT_TRUE(m.ok()) << m.status();
  const SparseRows& sparse = (*m)->loaded.sparse;
  if (root.empty()) root = VersionsRoot(job);
  ASSERT_TRUE(ClearStaging(root, version).ok());
  std::vector<uint64_t> keys;
  for (const auto& entry : sparse.index) {
    if (!std::isnan(scale_of(entry.first))) keys.push_back(entry.first);
  }
  const int d = sparse.row_dim;
  RowReader read = [&](absl::Span<const uint64_t> ks, float* out) {
    for (uint64_t key : ks) {
      const float* row = sparse.rows.data() + size_t(sparse.index.at(key)) * d;
      const float scale = scale_of(key);
      for (int j = 0; j < d; ++j) *out++ = row[j] * scale;
    }
    return absl::OkStatus();
  };
  ASSERT_TRUE(
      ExportSparsePart(StagingDir(root, version), 0, keys, d, read).ok());
  DenseModelState dense = (*m)->dense;
  for (float& w : dense.weights) w *= dense_scale;
  ASSERT_TRUE(SaveDenseModel(DenseModelPath(StagingDir(root, version)),
                             *(*m)->model, dense)
                  .ok());
  VersionInfo info;
  info.version = version;
  info.base = base == version;
  info.base_version = base;
  info.pass = absl::StrCat("20261201/", version);
  absl::Status s =
      PublishVersion(root, (*m)->loaded.config, ModelManifest(), info, 0);
  ASSERT_TRUE(s.ok()) << s;
}

}  // namespace

void PublishScaled(const JobConfig& job, uint64_t version, float scale,
                   std::string root) {
  PublishFrom(
      job, version, version, std::move(root),
      [scale](uint64_t) { return scale; }, scale);
}

void PublishDelta(const JobConfig& job, uint64_t version, uint64_t base,
                  float scale, std::string root) {
  PublishFrom(
      job, version, base, std::move(root),
      [version, scale](uint64_t key) {
        if (key % 7 == 0) return 0.0f;
        return key % 3 == version % 3 ? scale : std::nanf("");
      },
      scale);
}

// Eval's probability of every test line for `model`.
std::vector<float> EvalProbs(const std::string& model) {
  std::vector<float> probs;
  absl::StatusOr<EvalMetrics> m =
      EvaluateModel(model, Tmp() + "/data/test.tsv", nullptr, &probs);
  EXPECT_TRUE(m.ok()) << m.status();
  return probs;
}

ServingOptions OptionsFor(const std::string& model) {
  ServingOptions o;
  o.model = model;
  o.poll = absl::Milliseconds(20);
  o.max_examples_per_request = 100;
  o.max_line_bytes = 4096;
  return o;
}

void FlipByte(const std::string& path, long offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  char c = 0;
  f.read(&c, 1);
  f.seekp(offset);
  c ^= 0x5a;
  f.write(&c, 1);
}

Server::Server(const ServingOptions& options) : service_(options) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port_);
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
  channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_),
                                 grpc::InsecureChannelCredentials());
}

Server::~Server() {
  server_->Shutdown();
  service_.Stop();
}

grpc::Status Server::Predict(const PredictRequest& request,
                             PredictResponse* response) {
  auto stub = serving::Predictor::NewStub(channel_);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  return stub->Predict(&context, request, response);
}

namespace {

void ExpectServeEqualsEvalOnce(const ServingOptions& options) {
  Server server(options);
  absl::Status refreshed = server.service().Refresh();
  ASSERT_TRUE(refreshed.ok()) << refreshed;
  const std::vector<std::string> lines = TestLines();
  const std::vector<float> want = EvalProbs(options.model);
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
          << options.model << " line " << begin + i;
    }
  }
}

}  // namespace

void ExpectServeEqualsEval(const ServingOptions& options) {
  for (int threads : {1, 4}) {
    ServingOptions o = options;
    o.scoring_threads = threads;
    ExpectServeEqualsEvalOnce(o);
  }
}

double MetricValue(const std::string& name) {
  for (const auto& family : MetricsRegistry().Collect()) {
    if (family.name != name || family.metric.empty()) continue;
    return family.metric[0].counter.value + family.metric[0].gauge.value;
  }
  return -1;
}

double MetricValue(const std::string& name,
                   const std::map<std::string, std::string>& labels) {
  for (const auto& family : MetricsRegistry().Collect()) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      std::map<std::string, std::string> have;
      for (const auto& label : metric.label) have[label.name] = label.value;
      if (have != labels) continue;
      return metric.counter.value + metric.gauge.value +
             double(metric.histogram.sample_count);
    }
  }
  return -1;
}

grpc::Status PredictLines(Server* server, const std::vector<std::string>& lines,
                          size_t begin, size_t n, PredictResponse* response) {
  PredictRequest request;
  for (size_t i = begin; i < begin + n; ++i) request.add_lines(lines[i]);
  return server->Predict(request, response);
}

LoadResult RunLoad(Server* server, const std::vector<std::vector<float>>& want,
                   int clients, const std::atomic<bool>* stop) {
  const std::vector<std::string> lines = TestLines();
  std::mutex mu;
  LoadResult total;
  total.by_version.resize(want.size());
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      LoadResult mine;
      mine.by_version.resize(want.size());
      size_t begin = t * 37 % 200;
      while (!*stop) {
        PredictResponse response;
        grpc::Status s = PredictLines(server, lines, begin, 50, &response);
        ++mine.calls;
        if (!s.ok()) {
          ++mine.failures;
          continue;
        }
        const uint64_t v = response.version();
        if (v >= want.size() || want[v].empty()) {
          ++mine.mixed;
          continue;
        }
        ++mine.by_version[v];
        for (int i = 0; i < 50; ++i) {
          if (std::abs(response.probabilities(i) - want[v][begin + i]) > 1e-6) {
            ++mine.mixed;
            break;
          }
        }
        begin = (begin + 50) % 200;
      }
      std::lock_guard<std::mutex> lock(mu);
      total.calls += mine.calls;
      total.failures += mine.failures;
      total.mixed += mine.mixed;
      for (size_t v = 0; v < want.size(); ++v) {
        total.by_version[v] += mine.by_version[v];
      }
    });
  }
  for (auto& t : threads) t.join();
  return total;
}

}  // namespace servetest
}  // namespace sampan
