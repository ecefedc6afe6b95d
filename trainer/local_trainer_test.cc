#include "trainer/local_trainer.h"

#include <random>
#include <string>

#include "common/hash.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

// Two fields of 8 values each; the click depends on (a + b) % 2 only, an
// interaction no linear model can express.
Dataset XorData(int rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Dataset d;
  for (int i = 0; i < rows; ++i) {
    const int a = rng() % 8, b = rng() % 8;
    const bool odd = (a + b) % 2 == 1;
    const bool click = (rng() % 100) < (odd ? 90 : 10);
    d.labels.push_back(click ? 1 : 0);
    d.signs.push_back(FeatureSign(1, std::to_string(a)));
    d.signs.push_back(FeatureSign(2, std::to_string(b)));
    d.slots.push_back(1);
    d.slots.push_back(2);
    d.offsets.push_back(d.signs.size());
  }
  return d;
}

LocalTrainResult Train(CtrKind kind) {
  const Dataset train = XorData(20000, 1), test = XorData(2000, 2);
  LocalTrainOptions o;
  o.model.kind = kind;
  o.model.fields = 2;
  o.model.embedding_dim = 4;
  o.model.hidden = {16, 16};
  o.model.cross_layers = 2;
  o.table.learning_rate = 0.1f;
  o.table.init_range = 0.1f;
  o.dense.learning_rate = 0.01f;
  o.batch_size = 64;
  o.epochs = 3;
  o.eval_every = 20000;
  auto r = TrainLocal(train, &test, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : LocalTrainResult();
}

TEST(LocalTrainerTest, LrCannotLearnAnInteraction) {
  const LocalTrainResult r = Train(CtrKind::kLr);
  EXPECT_EQ(r.examples, 60000u);
  EXPECT_LT(r.test.auc, 0.6);
}

// The planted AUC is 0.9: models with interactions must come close.
TEST(LocalTrainerTest, FmLearnsTheInteraction) {
  EXPECT_GT(Train(CtrKind::kFm).test.auc, 0.85);
}
TEST(LocalTrainerTest, DeepFmLearnsTheInteraction) {
  const LocalTrainResult r = Train(CtrKind::kDeepFm);
  EXPECT_GT(r.test.auc, 0.85);
  // Marks at 20k, 40k, 60k examples plus the final point.
  EXPECT_GE(r.curve.size(), 3u);
  EXPECT_EQ(r.curve.back().examples, 60000u);
  EXPECT_NEAR(r.test.copc, 1.0, 0.1);
}
TEST(LocalTrainerTest, DcnV2LearnsTheInteraction) {
  EXPECT_GT(Train(CtrKind::kDcnV2).test.auc, 0.85);
}
TEST(LocalTrainerTest, DnnAndWideDeepLearnTheInteraction) {
  EXPECT_GT(Train(CtrKind::kDnn).test.auc, 0.85);
  EXPECT_GT(Train(CtrKind::kWideDeep).test.auc, 0.85);
}

TEST(LocalTrainerTest, StopsWhenValidationAucStopsRising) {
  // LR cannot learn XOR, so its validation AUC stalls within a few epochs.
  const Dataset train = XorData(20000, 1), validation = XorData(2000, 3);
  LocalTrainOptions o;
  o.model.kind = CtrKind::kLr;
  o.model.fields = 2;
  o.threads = 1;  // deterministic
  o.batch_size = 64;
  o.epochs = 8;
  o.validation = &validation;
  auto r = TrainLocal(train, nullptr, o);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<double>& auc = r->validation_auc;
  ASSERT_GE(auc.size(), 2u);
  ASSERT_LT(auc.size(), 8u) << "never stopped early";
  EXPECT_LE(auc.back(), auc[auc.size() - 2]);
  for (size_t e = 1; e + 1 < auc.size(); ++e) EXPECT_GT(auc[e], auc[e - 1]);
  EXPECT_LT(r->examples, 8u * train.size());
}

TEST(LocalTrainerTest, RejectsDataWithoutSlots) {
  Dataset d = XorData(10, 3);
  d.slots.clear();
  EXPECT_FALSE(TrainLocal(d, nullptr, LocalTrainOptions()).ok());
}

}  // namespace
}  // namespace sampan
