// Optimizer rules and the CTR accessor against arithmetic worked out here,
// in double, from the published update equations.
#include "sparse_table/accessor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "common/row_format.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

constexpr double kTol = 1e-6;

TableOptions Rule(OptimizerRule rule, float lr) {
  TableOptions o;
  o.rule = rule;
  o.learning_rate = lr;
  return o;
}

TEST(OptimizerRuleTest, SgdWithL2) {
  TableOptions o = Rule(OptimizerRule::kSgd, 0.5f);
  o.l2 = 0.1f;
  float w = 0;
  const float g = 1;
  ApplyRule(o, &w, nullptr, &g, 1);
  EXPECT_NEAR(w, -0.5, kTol);
  ApplyRule(o, &w, nullptr, &g, 1);
  EXPECT_NEAR(w, -0.5 - 0.5 * (1 + 0.1 * -0.5), kTol);  // -0.975
}

TEST(OptimizerRuleTest, AdagradSharesOneSumPerBlock) {
  TableOptions o = Rule(OptimizerRule::kAdagrad, 0.5f);
  o.embedding_initial_accumulator = 1;
  ASSERT_EQ(StateFloats(o.rule, 2), 1u);
  float w[2] = {1, -1}, state[1];
  InitState(o, WeightBlock::kEmbedding, w, state, 2);
  const float g[2] = {2, 1};
  ApplyRule(o, w, state, g, 2);
  const double g2 = 1 + (4 + 1) / 2.0;  // mean square added
  EXPECT_NEAR(state[0], g2, kTol);
  EXPECT_NEAR(w[0], 1 - 0.5 * 2 / std::sqrt(g2), kTol);
  EXPECT_NEAR(w[1], -1 - 0.5 * 1 / std::sqrt(g2), kTol);
}

TEST(OptimizerRuleTest, AdamTwoSteps) {
  TableOptions o = Rule(OptimizerRule::kAdam, 0.1f);
  o.epsilon = 1e-8f;
  ASSERT_EQ(StateFloats(o.rule, 1), 4u);
  float w = 0.5f, state[4];
  InitState(o, WeightBlock::kLinear, &w, state, 1);
  double m = 0, v = 0, ww = 0.5;
  const double grads[] = {0.2, -0.1};
  for (int t = 1; t <= 2; ++t) {
    const double g = grads[t - 1];
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    const double m_hat = m / (1 - std::pow(0.9, t));
    const double v_hat = v / (1 - std::pow(0.999, t));
    ww -= 0.1 * m_hat / (std::sqrt(v_hat) + 1e-8);
    const float gf = static_cast<float>(g);
    ApplyRule(o, &w, state, &gf, 1);
    EXPECT_NEAR(w, ww, kTol) << "step " << t;
    // Worked by hand: the first step is lr * sign(g); the second moves by
    // 0.1 * (0.008 / 0.19) / sqrt(4.996e-5 / 0.001999) = 0.026634.
    EXPECT_NEAR(ww, t == 1 ? 0.4 : 0.373366, 1e-6);
  }
}

// McMahan et al. 2013, Algorithm 1, per coordinate.
TEST(OptimizerRuleTest, FtrlProximalKeepsInitialWeightAndUpdates) {
  TableOptions o = Rule(OptimizerRule::kFtrl, 0.1f);
  o.ftrl_beta = 1;
  o.l1 = 0.5f;
  o.l2 = 0.1f;
  float w = 0.3f, state[2];
  InitState(o, WeightBlock::kLinear, &w, state, 1);
  const double alpha = 0.1, beta = 1, l1 = 0.5, l2 = 0.1;
  auto weight = [&](double z, double n) {
    if (std::abs(z) <= l1) return 0.0;
    return -(z - (z < 0 ? -l1 : l1)) / ((beta + std::sqrt(n)) / alpha + l2);
  };
  double z = state[0], n = 0, ww = 0.3;
  EXPECT_NEAR(weight(z, n), 0.3, kTol);  // init reproduces the weight
  for (double g : {2.0, -1.0}) {
    const double sigma = (std::sqrt(n + g * g) - std::sqrt(n)) / alpha;
    z += g - sigma * ww;
    n += g * g;
    ww = weight(z, n);
    const float gf = static_cast<float>(g);
    ApplyRule(o, &w, state, &gf, 1);
    EXPECT_NEAR(w, ww, kTol);
  }
  EXPECT_NEAR(ww, 8.581348 / 32.460680, 1e-5);  // worked by hand: 0.26436
}

TEST(OptimizerRuleTest, FtrlL1GivesExactZeros) {
  TableOptions o = Rule(OptimizerRule::kFtrl, 0.1f);
  o.l1 = 10;
  float w = 0, state[2];
  InitState(o, WeightBlock::kLinear, &w, state, 1);
  const float g = 1;
  ApplyRule(o, &w, state, &g, 1);
  EXPECT_EQ(w, 0.0f);  // |z| = 1 <= l1
}

TEST(OptimizerRuleTest, WeightBoundsClamp) {
  TableOptions o = Rule(OptimizerRule::kSgd, 0.5f);
  o.min_weight = -0.2f;
  o.max_weight = 0.2f;
  float w[2] = {0, 0};
  const float g[2] = {-1, 1};
  ApplyRule(o, w, nullptr, g, 2);
  EXPECT_EQ(w[0], 0.2f);
  EXPECT_EQ(w[1], -0.2f);
}

TableOptions CtrOptions() {
  TableOptions o = Rule(OptimizerRule::kSgd, 0.5f);
  o.embedding_dim = 2;
  o.init_range = 0.1f;
  o.nonclk_coeff = 0.1f;
  o.click_coeff = 1;
  return o;
}

TEST(CtrAccessorTest, EmbeddingCreatedOnceScorePassesThreshold) {
  TableOptions o = CtrOptions();
  o.embedx_threshold = 1.5f;
  CtrAccessor acc(o);
  EXPECT_EQ(acc.base_floats(), 5u);  // show, click, unseen, has_v, w
  EXPECT_EQ(acc.full_floats(), 7u);
  std::vector<float> row(acc.full_floats()), out(3);
  acc.InitRow(9, row.data());
  EXPECT_EQ(acc.stored_floats(row.data()), 5u);
  const float grad[3] = {1, 5, 5};
  acc.Push(9, row.data(), grad, 1, 1);  // score 1
  acc.Pull(row.data(), out.data());
  EXPECT_FLOAT_EQ(out[0], -0.5f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[2], 0.0f);
  acc.Push(9, row.data(), grad, 1, 1);  // score 2: v created, not trained
  EXPECT_EQ(acc.stored_floats(row.data()), 7u);
  acc.Pull(row.data(), out.data());
  EXPECT_FLOAT_EQ(out[0], -1.0f);
  EXPECT_NE(out[1], 0.0f);
  EXPECT_LE(std::abs(out[1]), 0.1f);
  const float v1 = out[1];
  acc.Push(9, row.data(), grad, 1, 0);
  acc.Pull(row.data(), out.data());
  EXPECT_FLOAT_EQ(out[1], v1 - 0.5f * 5);
}

TEST(CtrAccessorTest, ShrinkDecaysAndDeletesByScoreAndAge) {
  TableOptions o = CtrOptions();
  o.show_decay_rate = 0.5f;
  o.delete_threshold = 0.6f;
  CtrAccessor acc(o);
  std::vector<float> row(acc.full_floats());
  acc.InitRow(1, row.data());
  const float grad[3] = {0, 0, 0};
  acc.Push(1, row.data(), grad, 2, 1);
  EXPECT_NEAR(acc.Score(row.data()), 1.1, kTol);
  // show 1, click 0.5: score 0.05 + 0.5 = 0.55 < 0.6.
  EXPECT_TRUE(acc.Shrink(row.data()));
  EXPECT_FLOAT_EQ(row[CtrAccessor::kShow], 1.0f);

  o.delete_threshold = -1;
  o.delete_after_unseen_days = 2;
  CtrAccessor by_age(o);
  by_age.InitRow(1, row.data());
  EXPECT_FALSE(by_age.Shrink(row.data()));
  EXPECT_FALSE(by_age.Shrink(row.data()));
  by_age.Push(1, row.data(), grad, 1, 0);  // seen again: age resets
  EXPECT_FALSE(by_age.Shrink(row.data()));
  EXPECT_FALSE(by_age.Shrink(row.data()));
  EXPECT_TRUE(by_age.Shrink(row.data()));  // 3 days unseen > 2
}

// Adagrad: w's sum starts at initial_accumulator, v's at
// embedding_initial_accumulator, however the row is made (a new key, a
// delayed embedding, pulled values), and each block's first step is scaled
// by its own start.
TEST(CtrAccessorTest, WAndVStartTheirOwnAdagradSums) {
  TableOptions o = Rule(OptimizerRule::kAdagrad, 0.5f);
  o.embedding_dim = 2;
  o.initial_accumulator = 4;
  o.embedding_initial_accumulator = 100;
  CtrAccessor acc(o);
  // show, click, unseen, has_v, w, w_sum, v[2], v_sum
  ASSERT_EQ(acc.full_floats(), 9u);
  const uint32_t w_sum = CtrAccessor::kW + 1, v = w_sum + 1, v_sum = v + 2;
  std::vector<float> row(acc.full_floats());
  acc.InitRow(5, row.data());
  EXPECT_EQ(row[w_sum], 4.0f);
  EXPECT_EQ(row[v_sum], 100.0f);

  const float pulled[3] = {0.5f, 0.25f, -0.25f};
  acc.FromPulled(5, pulled, row.data());
  EXPECT_EQ(row[w_sum], 4.0f);
  EXPECT_EQ(row[v_sum], 100.0f);
  const float grad[3] = {2, 2, 2};
  acc.Push(5, row.data(), grad, 1, 0);
  EXPECT_NEAR(row[CtrAccessor::kW], 0.5 - 0.5 * 2 / std::sqrt(4 + 4.0), kTol);
  EXPECT_NEAR(row[v], 0.25 - 0.5 * 2 / std::sqrt(100 + 4.0), kTol);

  o.embedx_threshold = 1;  // v created on a later push
  CtrAccessor delayed(o);
  delayed.InitRow(6, row.data());
  EXPECT_EQ(row[CtrAccessor::kHasV], 0.0f);
  delayed.Push(6, row.data(), grad, 1, 1);
  ASSERT_EQ(row[CtrAccessor::kHasV], 1.0f);
  EXPECT_EQ(row[v_sum], 100.0f);
}

TEST(CtrAccessorTest, LoadRejectsWrongSizes) {
  CtrAccessor acc(CtrOptions());
  std::vector<float> row(acc.full_floats()), stored(acc.full_floats());
  acc.InitRow(3, stored.data());
  EXPECT_TRUE(acc.Load(stored.data(), 7, row.data()));
  EXPECT_EQ(row, stored);
  EXPECT_FALSE(acc.Load(stored.data(), 6, row.data()));
}

TEST(RowFormatLayoutTest, WordsPerRowAtDim16) {
  TableOptions o = Rule(OptimizerRule::kAdagrad, 0.1f);
  o.embedding_dim = 16;
  // show, click, unseen, has_v, w, w_sum | v | v_sum
  const uint32_t want[] = {6 + 16 + 1, 6 + 8 + 1, 6 + 5 + 1};
  int i = 0;
  for (RowFormat f : {RowFormat::kFp32, RowFormat::kFp16, RowFormat::kInt8}) {
    o.row_format = f;
    CtrAccessor acc(o);
    EXPECT_EQ(acc.full_floats(), want[i++]) << RowFormatName(f);
    EXPECT_EQ(acc.base_floats(), 6u);
  }
  o.row_format = RowFormat::kInt8;
  o.rule = OptimizerRule::kSgd;
  o.embedding_dim = 0;
  EXPECT_EQ(CtrAccessor(o).full_floats(), 5u);  // no v: nothing to pack
}

TEST(RowFormatLayoutTest, LayoutCodesNameFormatDimAndRule) {
  TableOptions o;
  o.embedding_dim = 16;
  o.row_format = RowFormat::kInt8;
  EXPECT_EQ(DescribeRowLayout(RowLayoutCode(o)), "INT8 rows, dim 16, ADAGRAD");
  EXPECT_TRUE(CheckRowLayout(o, RowLayoutCode(o), "f").ok());
  const absl::Status old = CheckRowLayout(o, 0, "/x/delta-3");
  EXPECT_EQ(old.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(old.message().find("/x/delta-3 holds an unrecorded layout"),
            std::string::npos)
      << old;
  TableOptions lr = o;  // no v: the format changes nothing
  lr.embedding_dim = 0;
  TableOptions lr32 = lr;
  lr32.row_format = RowFormat::kFp32;
  EXPECT_EQ(RowLayoutCode(lr), RowLayoutCode(lr32));
  EXPECT_TRUE(CheckRowLayout(lr, 0, "f").ok());
  TableOptions fp32 = o;
  fp32.row_format = RowFormat::kFp32;
  EXPECT_TRUE(CheckRowLayout(fp32, 0, "f").ok());  // files from before
  const absl::Status other = CheckRowLayout(fp32, RowLayoutCode(o), "d");
  EXPECT_NE(other.message().find("d holds INT8 rows, dim 16, ADAGRAD; table "
                                 "'table0' is configured for FP32 rows"),
            std::string::npos)
      << other;
}

// Each push decodes v, updates it in float32 exactly as an FP32 row would
// and rounds once: an FP32 twin given the compact row's decoded v and its
// state takes the same step; the compact row's v is within one code of the
// twin's, its state and w are the twin's bit for bit. Adagrad and SGD are
// also checked against the update worked out in double.
class RowFormatAccessorTest
    : public ::testing::TestWithParam<
          std::tuple<RowFormat, OptimizerRule, Rounding>> {};

TEST_P(RowFormatAccessorTest, EachPushIsTheFloat32UpdateRoundedOnce) {
  const auto [format, rule, rounding] = GetParam();
  TableOptions o = Rule(rule, 0.05f);
  o.embedding_dim = 16;
  o.init_range = 0.05f;
  o.initial_accumulator = 1;
  o.embedding_initial_accumulator = 1;
  o.row_format = format;
  o.rounding = rounding;
  TableOptions o32 = o;
  o32.row_format = RowFormat::kFp32;
  const CtrAccessor acc(o), ref(o32);
  const uint32_t dim = 16, base = acc.base_floats(),
                 vs = base + acc.embedding_words();
  std::vector<float> row(acc.full_floats()), twin(ref.full_floats());
  acc.InitRow(77, row.data());
  ref.InitRow(77, twin.data());
  std::vector<float> before(1 + dim), after(1 + dim), want(1 + dim);
  acc.Pull(row.data(), before.data());
  ref.Pull(twin.data(), want.data());
  for (uint32_t j = 0; j <= dim; ++j) {  // the initial v, rounded once
    EXPECT_NEAR(before[j], want[j], 0.05 / 127 + 1e-7) << j;
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> gauss(0, 0.3f);
  for (int step = 0; step < 300; ++step) {
    acc.Pull(row.data(), before.data());
    std::copy(row.begin(), row.begin() + base, twin.begin());
    std::copy(before.begin() + 1, before.end(), twin.begin() + base);
    std::copy(row.begin() + vs, row.end(), twin.begin() + base + dim);
    std::vector<float> g(1 + dim);
    for (float& x : g) x = gauss(rng);
    const double sum_before = row.back();  // Adagrad: v's sum
    acc.Push(77, row.data(), g.data(), 1, step % 3 == 0);
    ref.Push(77, twin.data(), g.data(), 1, step % 3 == 0);
    acc.Pull(row.data(), after.data());
    ref.Pull(twin.data(), want.data());
    ASSERT_EQ(after[0], want[0]) << "w, step " << step;
    ASSERT_EQ(std::memcmp(row.data() + vs, twin.data() + base + dim,
                          (row.size() - vs) * 4),
              0)
        << "optimizer state, step " << step;
    float max_abs = 0;
    for (uint32_t j = 1; j <= dim; ++j) {
      max_abs = std::max(max_abs, std::fabs(want[j]));
    }
    for (uint32_t j = 1; j <= dim; ++j) {
      double tol = 0;  // FP32: the twin exactly
      if (format == RowFormat::kFp16) {
        tol = std::max(std::fabs(want[j]) * 0x1.0p-10, 0x1.0p-24);
      } else if (format == RowFormat::kInt8) {
        tol = max_abs / 127.0 * 1.0001;
      }
      if (rounding == Rounding::kNearest) tol /= 2;
      ASSERT_LE(std::fabs(after[j] - want[j]), tol)
          << "v[" << j - 1 << "], step " << step;
    }
    if (rule == OptimizerRule::kAdagrad || rule == OptimizerRule::kSgd) {
      // In double from the decoded v and, for Adagrad, the stored sum.
      double lr = 0.05;
      if (rule == OptimizerRule::kAdagrad) {
        double mean_sq = 0;
        for (uint32_t j = 1; j <= dim; ++j) mean_sq += double(g[j]) * g[j];
        const double sum = sum_before + mean_sq / dim;
        ASSERT_NEAR(row.back(), sum, sum * 1e-6);
        lr = 0.05 / std::sqrt(sum);
      }
      for (uint32_t j = 1; j <= dim; ++j) {
        const double exact = before[j] - lr * g[j];
        const double tol = format == RowFormat::kFp32 ? 1e-6
                           : format == RowFormat::kFp16
                               ? std::fabs(exact) * 0x1.0p-10 + 1e-6
                               : max_abs / 127.0 + 1e-6;
        ASSERT_NEAR(after[j], exact, tol)
            << "v[" << j - 1 << "], step " << step;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    FormatsRulesRoundings, RowFormatAccessorTest,
    ::testing::Combine(
        ::testing::Values(RowFormat::kFp32, RowFormat::kFp16, RowFormat::kInt8),
        ::testing::Values(OptimizerRule::kSgd, OptimizerRule::kAdagrad,
                          OptimizerRule::kAdam, OptimizerRule::kFtrl),
        ::testing::Values(Rounding::kStochastic, Rounding::kNearest)));

}  // namespace
}  // namespace sampan
