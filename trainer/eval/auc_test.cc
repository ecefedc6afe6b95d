#include "trainer/eval/auc.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace sampan {
namespace {

TEST(ExactAucTest, PerfectInvertedAndTied) {
  EXPECT_DOUBLE_EQ(ExactAuc({0.1f, 0.2f, 0.8f, 0.9f}, {0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(ExactAuc({0.9f, 0.8f, 0.2f, 0.1f}, {0, 0, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(ExactAuc({0.5f, 0.5f, 0.5f, 0.5f}, {0, 1, 0, 1}), 0.5);
  EXPECT_DOUBLE_EQ(ExactAuc({0.3f, 0.3f}, {1, 1}), 0.5);  // one class only
}

TEST(ExactAucTest, HandComputedCase) {
  // Pairs (pos, neg): (0.4 vs 0.1) win, (0.4 vs 0.5) lose, (0.7 vs both) win.
  EXPECT_DOUBLE_EQ(ExactAuc({0.1f, 0.4f, 0.5f, 0.7f}, {0, 1, 0, 1}), 0.75);
}

TEST(StreamingAucTest, AgreesWithExactWithinBucketWidth) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> scores, labels;
  StreamingAuc streaming;
  for (int i = 0; i < 20000; ++i) {
    const float p = u(rng);
    const float y = u(rng) < p ? 1.f : 0.f;
    scores.push_back(p);
    labels.push_back(y);
    streaming.Add(p, y);
  }
  EXPECT_EQ(streaming.count(), 20000u);
  EXPECT_NEAR(streaming.Auc(), ExactAuc(scores, labels), 1e-3);
  EXPECT_GT(streaming.Auc(), 0.8);  // p(y|score) = score: AUC is 5/6
}

TEST(LogLossTest, KnownValues) {
  EXPECT_NEAR(LogLoss({0.5f, 0.5f}, {0, 1}), std::log(2.0), 1e-6);
  EXPECT_NEAR(LogLoss({0.9f}, {1}), -std::log(0.9), 1e-6);
}

TEST(EvaluateTest, CopcAndLogloss) {
  const std::vector<float> probs = {0.25f, 0.25f, 0.5f, 0.5f};
  const std::vector<float> labels = {0, 1, 0, 1};
  const EvalMetrics m = Evaluate(probs, labels);
  EXPECT_EQ(m.rows, 4u);
  EXPECT_NEAR(m.copc, 2.0 / 1.5, 1e-9);
  EXPECT_NEAR(m.auc, 0.5, 1e-9);
  EXPECT_NEAR(m.logloss,
              -(std::log(0.75) + std::log(0.25) + 2 * std::log(0.5)) / 4, 1e-6);
}

}  // namespace
}  // namespace sampan
