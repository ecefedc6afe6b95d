#include "trainer/model/model_io.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "gtest/gtest.h"

namespace sampan {
namespace {

CtrModelOptions SmallDcn(std::vector<int> hidden = {8, 4}) {
  CtrModelOptions o;
  o.kind = CtrKind::kDcnV2;
  o.fields = 3;
  o.embedding_dim = 2;
  o.hidden = std::move(hidden);
  o.cross_layers = 2;
  return o;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// Weights after a few Adam steps, so every optimizer slot is non-trivial.
DenseModelState Trained(const CtrModel& model, DenseOptimizer* opt) {
  DenseModelState s;
  s.weights.resize(model.dense_size());
  model.InitDense(s.weights.data());
  std::vector<float> g(model.dense_size());
  for (int step = 0; step < 3; ++step) {
    for (size_t i = 0; i < g.size(); ++i) g[i] = 0.01f * ((i * 7 + step) % 5);
    opt->Apply(s.weights.data(), g.data());
  }
  s.optimizer = opt->State();
  return s;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(ModelIoTest, RoundTripIsBitwiseAndResumesIdentically) {
  const CtrModel model(SmallDcn());
  auto opt = DenseOptimizer::Create({}, model.dense_size());
  const DenseModelState saved = Trained(model, opt.get());
  const std::string path = TempPath("roundtrip.dense");
  ASSERT_TRUE(SaveDenseModel(path, model, saved).ok());
  std::ifstream tmp(path + ".tmp");
  EXPECT_FALSE(tmp.good()) << "temp file left behind";

  absl::StatusOr<DenseModelState> loaded = LoadDenseModel(path, model);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(SameBits(saved.weights, loaded->weights));
  EXPECT_EQ(loaded->optimizer.rule, DenseRule::kAdam);
  EXPECT_EQ(loaded->optimizer.steps, 3);
  ASSERT_EQ(loaded->optimizer.slots.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    EXPECT_TRUE(SameBits(saved.optimizer.slots[s], loaded->optimizer.slots[s]));
  }

  // A restored optimizer takes exactly the step the original takes.
  auto resumed = DenseOptimizer::Create({}, model.dense_size());
  ASSERT_TRUE(resumed->Restore(loaded->optimizer).ok());
  std::vector<float> a = saved.weights, b = loaded->weights;
  const std::vector<float> g(model.dense_size(), 0.02f);
  opt->Apply(a.data(), g.data());
  resumed->Apply(b.data(), g.data());
  EXPECT_TRUE(SameBits(a, b));
}

TEST(ModelIoTest, SavesModelsWithoutDenseWeights) {
  CtrModelOptions o;
  o.kind = CtrKind::kFm;
  const CtrModel model(o);
  const std::string path = TempPath("fm.dense");
  ASSERT_TRUE(SaveDenseModel(path, model, {}).ok());
  absl::StatusOr<DenseModelState> loaded = LoadDenseModel(path, model);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->weights.empty());
}

TEST(ModelIoTest, RejectsAnotherLayerShapeNamingTheLayer) {
  const CtrModel model(SmallDcn({8, 4}));
  auto opt = DenseOptimizer::Create({}, model.dense_size());
  const std::string path = TempPath("shape.dense");
  ASSERT_TRUE(SaveDenseModel(path, model, Trained(model, opt.get())).ok());
  const absl::StatusOr<DenseModelState> r =
      LoadDenseModel(path, CtrModel(SmallDcn({8, 5})));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string msg(r.status().message());
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("mlp1.W 8x4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("8x5"), std::string::npos) << msg;

  // Fewer layers: the first unmatched block is named.
  const absl::StatusOr<DenseModelState> fewer =
      LoadDenseModel(path, CtrModel(SmallDcn({8})));
  ASSERT_EQ(fewer.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(fewer.status().message().find("mlp1.W"), std::string::npos)
      << fewer.status();
}

TEST(ModelIoTest, RejectsAnotherModelKind) {
  const CtrModel model(SmallDcn());
  auto opt = DenseOptimizer::Create({}, model.dense_size());
  const std::string path = TempPath("kind.dense");
  ASSERT_TRUE(SaveDenseModel(path, model, Trained(model, opt.get())).ok());
  CtrModelOptions o = SmallDcn();
  o.kind = CtrKind::kDeepFm;
  const absl::StatusOr<DenseModelState> r = LoadDenseModel(path, CtrModel(o));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("DCN_V2"), std::string::npos)
      << r.status();
}

TEST(ModelIoTest, RejectsTruncatedCorruptAndMissingFiles) {
  const CtrModel model(SmallDcn());
  auto opt = DenseOptimizer::Create({}, model.dense_size());
  const std::string path = TempPath("bad.dense");
  ASSERT_TRUE(SaveDenseModel(path, model, Trained(model, opt.get())).ok());
  const std::string good = ReadAll(path);

  WriteAll(path, good.substr(0, good.size() - 5));
  absl::Status s = LoadDenseModel(path, model).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s;

  WriteAll(path, good.substr(0, 10));
  s = LoadDenseModel(path, model).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s;

  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x10;
  WriteAll(path, flipped);
  s = LoadDenseModel(path, model).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("CRC32"), std::string::npos) << s;

  WriteAll(path, "not a model at all, but long enough to have a header");
  s = LoadDenseModel(path, model).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("magic"), std::string::npos) << s;

  s = LoadDenseModel(TempPath("absent.dense"), model).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find("absent.dense"), std::string::npos) << s;
}

TEST(ModelIoTest, SaveRejectsWeightsOfAnotherSize) {
  const CtrModel model(SmallDcn());
  DenseModelState s;
  s.weights.resize(model.dense_size() + 1);
  EXPECT_EQ(SaveDenseModel(TempPath("x.dense"), model, s).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DenseOptimizerStateTest, RestoreRejectsAnotherRuleOrSize) {
  auto adam = DenseOptimizer::Create({}, 4);
  DenseOptimizerOptions sgd_options;
  sgd_options.rule = DenseRule::kSgd;
  auto sgd = DenseOptimizer::Create(sgd_options, 4);
  absl::Status s = adam->Restore(sgd->State());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("sgd"), std::string::npos) << s;
  auto small = DenseOptimizer::Create({}, 3);
  EXPECT_EQ(adam->Restore(small->State()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(adam->Restore(adam->State()).ok());
}

}  // namespace
}  // namespace sampan
