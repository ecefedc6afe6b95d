#include "trainer/model/word2vec.h"

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/data/formats.h"

namespace sampan {
namespace {

Vocabulary VocabOf(const std::vector<std::string>& lines, uint64_t min_count,
                   double subsample) {
  Vocabulary v;
  for (const std::string& line : lines) {
    v.CountLine();
    EXPECT_TRUE(
        ForEachTextToken(line, [&](std::string_view t) { v.Count(t); }).ok());
  }
  v.Finish(min_count, subsample);
  return v;
}

Batch BatchOf(const std::vector<std::string>& lines) {
  Batch b;
  b.Clear();
  ParseOptions o;
  o.format = DataFileFormat::kText;
  for (const std::string& line : lines) {
    float label = 1;
    std::vector<float> dense;
    EXPECT_TRUE(ParseLine(line, o, &label, &b.signs, &b.slots, &dense).ok());
    b.labels.push_back(label);
    b.offsets.push_back(uint32_t(b.signs.size()));
  }
  return b;
}

TEST(VocabularyTest, CountsKeepsAndOrdersByHand) {
  const Vocabulary v = VocabOf({"a b a", "", "c a  b\td"}, 2, 0.1);
  EXPECT_EQ(v.lines(), 3u);
  EXPECT_EQ(v.tokens(), 7u);
  ASSERT_EQ(v.size(), 2u);  // c and d seen once
  EXPECT_EQ(v.word(0), "a");
  EXPECT_EQ(v.count(0), 3u);
  EXPECT_EQ(v.word(1), "b");
  EXPECT_EQ(v.count(1), 2u);
  // keep = sqrt(t / f) + t / f with f = count / tokens.
  const double fa = 3.0 / 7, fb = 2.0 / 7;
  EXPECT_NEAR(v.keep(0), std::sqrt(0.1 / fa) + 0.1 / fa, 1e-6);
  EXPECT_NEAR(v.keep(1), std::sqrt(0.1 / fb) + 0.1 / fb, 1e-6);
  EXPECT_EQ(v.Find(WordInputKey("a")), 0);
  EXPECT_EQ(v.Find(WordInputKey("c")), -1);
  EXPECT_EQ(v.Find(WordOutputKey("a")), -1);
  EXPECT_NE(v.input_key(0), v.output_key(0));
  // The parser's sign of a token is its input key.
  const Batch b = BatchOf({"a"});
  EXPECT_EQ(b.signs[0], v.input_key(0));
}

TEST(VocabularyTest, TiesOrderByWordAndRareWordsKeepAll) {
  const Vocabulary v = VocabOf({"z y x y z x"}, 1, 0);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v.word(0), "x");
  EXPECT_EQ(v.word(2), "z");
  EXPECT_EQ(v.keep(1), 1.0f);
}

// Unigram^0.75 draws pass a chi-square test at p = 0.001.
TEST(NegativeSamplerTest, FollowsUnigramToThreeQuarters) {
  std::vector<std::string> lines;
  std::string line;
  const int kWords = 50;
  for (int w = 1; w <= kWords; ++w) {
    for (int k = 0; k < 1000 / w; ++k) line += "w" + std::to_string(w) + " ";
  }
  lines.push_back(line);
  const Vocabulary v = VocabOf(lines, 1, 0);
  ASSERT_EQ(v.size(), size_t(kWords));
  const NegativeSampler s(v);
  double total = 0;
  for (int i = 0; i < kWords; ++i) total += std::pow(v.count(i), 0.75);
  for (int i = 0; i < kWords; ++i) {
    EXPECT_NEAR(s.Probability(i), std::pow(v.count(i), 0.75) / total, 1e-12);
  }
  std::mt19937_64 rng(7);
  const int kDraws = 200000;
  std::vector<int> seen(kWords, 0);
  for (int d = 0; d < kDraws; ++d) ++seen[s.Sample(rng())];
  double chi2 = 0;
  for (int i = 0; i < kWords; ++i) {
    const double want = kDraws * s.Probability(i);
    chi2 += (seen[i] - want) * (seen[i] - want) / want;
  }
  EXPECT_LT(chi2, 85.35) << "49 degrees of freedom, p = 0.001";
}

double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// The loss of every planned update at `rows` (exact sigmoid, in double),
// with float `col` of row `row` moved by `delta`. An input row's move moves
// the mean h by all of `delta`: CBOW gives each context word the whole
// gradient of the mean, as word2vec and fastText do.
double PlannedLoss(const WordModel::Workspace& ws,
                   const std::vector<float>& rows, int dim, int negatives,
                   uint32_t row = ~0u, int col = 0, double delta = 0) {
  const int rd = dim + 1;
  const auto at = [&](uint32_t r, int j) {
    return rows[r * rd + 1 + j] + (r == row && j == col ? delta : 0);
  };
  double loss = 0;
  size_t p = 0;
  while (p < ws.ops.size()) {
    const uint32_t n = ws.ops[p++];
    std::vector<double> h(dim, 0);
    bool moved = false;
    for (uint32_t k = 0; k < n; ++k) {
      moved = moved || ws.ops[p + k] == row;
      for (int j = 0; j < dim; ++j) h[j] += rows[ws.ops[p + k] * rd + 1 + j];
    }
    for (double& x : h) x /= n;
    if (moved) h[col] += delta;
    p += n;
    for (int k = 0; k <= negatives; ++k) {
      const uint32_t o = ws.ops[p++];
      double f = 0;
      for (int j = 0; j < dim; ++j) f += h[j] * at(o, j);
      loss -= std::log(Sigmoid(k == 0 ? f : -f));
    }
  }
  return loss;
}

// With a small step, Train's change of every row is -rate times the
// gradient of the planned updates' loss (checked by central differences).
void CheckGradient(bool cbow) {
  const Vocabulary v = VocabOf({"a b c d e a b c d e f g"}, 1, 0);
  WordModelOptions o;
  o.dim = 6;
  o.window = 2;
  o.negatives = 2;
  o.cbow = cbow;
  o.learning_rate = 1e-4f;
  o.planned_lines = 1000000;
  const WordModel m(&v, o);
  WordModel::Workspace ws;
  std::vector<uint64_t> keys;
  std::vector<float> shows;
  m.Plan(BatchOf({"a b c d", "e f g"}), &ws, &keys, &shows);
  ASSERT_GT(ws.updates, 0u);
  ASSERT_EQ(ws.rows, keys.size());
  const int rd = m.row_dim();
  std::vector<float> rows(keys.size() * rd);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.8f, 0.8f);
  for (float& x : rows) x = u(rng);
  std::vector<float> trained = rows, grads(rows.size());
  const double loss = m.Train(&ws, trained.data(), grads.data());
  EXPECT_NEAR(loss, PlannedLoss(ws, rows, o.dim, o.negatives),
              0.02 * ws.updates);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i % rd == 0) {
      EXPECT_EQ(grads[i], 0.0f) << "w is not trained";
      continue;
    }
    const double eps = 1e-3;
    const uint32_t r = uint32_t(i / rd);
    const int c = int(i % rd) - 1;
    const double numeric =
        (PlannedLoss(ws, rows, o.dim, o.negatives, r, c, eps) -
         PlannedLoss(ws, rows, o.dim, o.negatives, r, c, -eps)) /
        (2 * eps);
    // The step's sigmoid is a table: ~0.004 off at most per term.
    EXPECT_NEAR(grads[i], numeric, 0.02 + 0.03 * std::abs(numeric))
        << "row " << i / rd << " (" << keys[i / rd] << ") float " << i % rd;
  }
}

TEST(WordModelTest, SkipGramGradientMatchesLoss) { CheckGradient(false); }
TEST(WordModelTest, CbowGradientMatchesLoss) { CheckGradient(true); }

TEST(WordModelTest, PlanListsEachRowOnceAndCountsUses) {
  const Vocabulary v = VocabOf({"a b c a b c x"}, 2, 0);
  WordModelOptions o;
  o.dim = 4;
  o.window = 1;
  o.negatives = 3;
  const WordModel m(&v, o);
  WordModel::Workspace ws;
  std::vector<uint64_t> keys;
  std::vector<float> shows;
  // x is below min_count; the lone "a" has no context.
  m.Plan(BatchOf({"a b x c", "a", ""}), &ws, &keys, &shows);
  EXPECT_EQ(ws.tokens, 5u);
  // window 1 after dropping x: a-b, b-a, b-c, c-b.
  EXPECT_EQ(ws.updates, 4u);
  std::map<uint64_t, int> seen;
  for (uint64_t k : keys) ++seen[k];
  for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;
  EXPECT_EQ(seen.count(v.input_key(0)), 1u);
  double uses = 0;
  for (float s : shows) uses += s;
  // Per update a target and 3 negatives; per centre word with a context
  // (a, b, c) its input row.
  EXPECT_EQ(uses, 4 * 4 + 3);
  EXPECT_EQ(ws.ops.size(), 4u * (1 + 1 + 1 + 3));
  // The decay: each Plan counts its lines.
  EXPECT_EQ(m.lines_done(), 3u);
}

TEST(WordModelTest, RateDecaysLinearlyOverPlannedLines) {
  const Vocabulary v = VocabOf({"a b"}, 1, 0);
  WordModelOptions o;
  o.learning_rate = 0.1f;
  o.planned_lines = 10;
  o.start_lines = 5;
  const WordModel m(&v, o);
  WordModel::Workspace ws;
  std::vector<uint64_t> keys;
  std::vector<float> shows;
  m.Plan(BatchOf({"a b", "b a"}), &ws, &keys, &shows);
  EXPECT_NEAR(ws.rate, 0.05f, 1e-7);
  m.Plan(BatchOf({"a b", "a b", "a b"}), &ws, &keys, &shows);
  EXPECT_NEAR(ws.rate, 0.03f, 1e-7);
  m.Plan(BatchOf({"a b", "a b", "a b", "a b"}), &ws, &keys, &shows);
  EXPECT_NEAR(ws.rate, 1e-5f, 1e-9) << "floor: 1e-4 of the start";
}

}  // namespace
}  // namespace sampan
