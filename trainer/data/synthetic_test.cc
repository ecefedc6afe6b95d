#include "trainer/data/synthetic.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainer/data/batch.h"
#include "trainer/data/criteo_reader.h"
#include "trainer/eval/auc.h"

namespace sampan {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& contents) {
  std::vector<std::string> lines;
  std::istringstream in(contents);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

struct Files {
  std::string train, test, planted;
};

Files PathsFor(const std::string& name) {
  return {TempPath(name + "_train.tsv"), TempPath(name + "_test.tsv"),
          TempPath(name + "_planted.txt")};
}

TEST(SyntheticTest, SmallGeneration) {
  SyntheticOptions options;
  options.rows = 20000;
  options.seed = 3;
  options.test_fraction = 0.25;
  const Files f = PathsFor("small");
  auto result = GenerateCriteoData(options, f.train, f.test, f.planted);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->train_rows, 15000u);
  EXPECT_EQ(result->test_rows, 5000u);
  EXPECT_GT(result->train_ctr, 0.1);
  EXPECT_LT(result->train_ctr, 0.4);
  EXPECT_GT(result->planted_test_auc, 0.75);
  EXPECT_LT(result->planted_test_auc, 0.9);
  EXPECT_GT(result->planted_test_logloss, 0.2);
  EXPECT_LT(result->planted_test_logloss, 0.6);

  const std::vector<std::string> train = Lines(ReadFile(f.train));
  const std::vector<std::string> test = Lines(ReadFile(f.test));
  const std::vector<std::string> planted = Lines(ReadFile(f.planted));
  ASSERT_EQ(train.size(), 15000u);
  ASSERT_EQ(test.size(), 5000u);
  ASSERT_EQ(planted.size(), 5000u);

  // Every line parses; count positives and empty fields.
  uint64_t positives = 0, signs_total = 0;
  std::vector<uint64_t> signs;
  for (const auto* lines : {&train, &test}) {
    for (const std::string& line : *lines) {
      float label = -1;
      signs.clear();
      const absl::Status status = ParseCriteoLine(line, true, &label, &signs);
      ASSERT_TRUE(status.ok()) << status << ": " << line;
      if (lines == &train) positives += label == 1.0f;
      signs_total += signs.size();
    }
  }
  EXPECT_NEAR(static_cast<double>(positives) / train.size(), result->train_ctr,
              1e-12);
  // Some, but not many, fields are empty.
  const double filled = static_cast<double>(signs_total) / 20000 / 39;
  EXPECT_GT(filled, 0.8);
  EXPECT_LT(filled, 0.98);

  // Categorical tokens are 8 lowercase hex digits.
  const std::string first_token = train[0].substr(train[0].rfind('\t') + 1);
  if (!first_token.empty()) {
    EXPECT_EQ(first_token.size(), 8u);
    EXPECT_EQ(first_token.find_first_not_of("0123456789abcdef"),
              std::string::npos);
  }

  // Planted probabilities reproduce the reported AUC.
  std::vector<float> probs, labels;
  for (size_t i = 0; i < test.size(); ++i) {
    const double p = std::atof(planted[i].c_str());
    ASSERT_GT(p, 0.0);
    ASSERT_LT(p, 1.0);
    probs.push_back(static_cast<float>(p));
    labels.push_back(test[i][0] == '1' ? 1.0f : 0.0f);
  }
  EXPECT_NEAR(ExactAuc(probs, labels), result->planted_test_auc, 1e-6);
}

TEST(SyntheticTest, DeterministicInSeed) {
  SyntheticOptions options;
  options.rows = 5000;
  options.seed = 11;
  const Files a = PathsFor("det_a"), b = PathsFor("det_b"),
              c = PathsFor("det_c");
  ASSERT_TRUE(GenerateCriteoData(options, a.train, a.test, a.planted).ok());
  ASSERT_TRUE(GenerateCriteoData(options, b.train, b.test, "").ok());
  options.seed = 12;
  ASSERT_TRUE(GenerateCriteoData(options, c.train, c.test, c.planted).ok());
  EXPECT_EQ(ReadFile(a.train), ReadFile(b.train));
  EXPECT_EQ(ReadFile(a.test), ReadFile(b.test));
  EXPECT_FALSE(std::ifstream(b.planted).good());
  EXPECT_NE(ReadFile(a.train), ReadFile(c.train));
  EXPECT_NE(ReadFile(a.test), ReadFile(c.test));
  EXPECT_NE(ReadFile(a.planted), ReadFile(c.planted));
}

TEST(SyntheticTest, ErrorsNameThePath) {
  SyntheticOptions options;
  options.rows = 10;
  const std::string bad = TempPath("no_such_dir/x.tsv");
  const Files f = PathsFor("errors");
  auto r1 = GenerateCriteoData(options, bad, f.test, f.planted);
  ASSERT_FALSE(r1.ok());
  EXPECT_THAT(std::string(r1.status().message()), HasSubstr(bad));
  auto r2 = GenerateCriteoData(options, f.train, bad, f.planted);
  ASSERT_FALSE(r2.ok());
  EXPECT_THAT(std::string(r2.status().message()), HasSubstr(bad));
  auto r3 = GenerateCriteoData(options, f.train, f.test, bad);
  ASSERT_FALSE(r3.ok());
  EXPECT_THAT(std::string(r3.status().message()), HasSubstr(bad));
  options.test_fraction = 1.5;
  EXPECT_TRUE(absl::IsInvalidArgument(
      GenerateCriteoData(options, f.train, f.test, f.planted).status()));
}

// A hashed logistic regression trained by Adagrad in one pass over the
// training file must get most of the way to the planted AUC.
class HashedLogReg {
 public:
  static constexpr uint64_t kSize = uint64_t{1} << 20;
  HashedLogReg() : w_(kSize, 0.0f), g_(kSize, 0.0f) {}

  double Predict(const uint64_t* signs, size_t n) const {
    double z = bias_;
    for (size_t i = 0; i < n; ++i) z += w_[signs[i] & (kSize - 1)];
    return 1.0 / (1.0 + std::exp(-z));
  }
  void Update(const uint64_t* signs, size_t n, float label) {
    const double grad = Predict(signs, n) - label;
    bias_g_ += grad * grad;
    bias_ -= kRate * grad / std::sqrt(bias_g_ + 1e-8);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t h = signs[i] & (kSize - 1);
      g_[h] += static_cast<float>(grad * grad);
      w_[h] -= static_cast<float>(kRate * grad / std::sqrt(g_[h] + 1e-8));
    }
  }

 private:
  static constexpr double kRate = 0.05;
  std::vector<float> w_, g_;
  double bias_ = 0, bias_g_ = 0;
};

template <typename Fn>
void ForEachRow(const std::string& path, Fn fn) {
  auto reader = CriteoReader::Open(path, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  Batch batch;
  while ((*reader)->NextBatch(1024, &batch)) {
    for (size_t i = 0; i < batch.size(); ++i) {
      fn(batch.signs.data() + batch.offsets[i],
         batch.offsets[i + 1] - batch.offsets[i], batch.labels[i]);
    }
  }
  EXPECT_EQ((*reader)->bad_rows(), 0u);
}

TEST(SyntheticTest, LearnableInOnePass) {
  SyntheticOptions options;
  options.rows = 240000;
  options.seed = 5;
  options.test_fraction = 1.0 / 6;  // 200k train, 40k test
  const Files f = PathsFor("learn");
  auto result = GenerateCriteoData(options, f.train, f.test, "");
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->train_rows, 200000u);

  HashedLogReg model;
  ForEachRow(f.train, [&](const uint64_t* s, size_t n, float label) {
    model.Update(s, n, label);
  });
  std::vector<float> probs, labels;
  ForEachRow(f.test, [&](const uint64_t* s, size_t n, float label) {
    probs.push_back(static_cast<float>(model.Predict(s, n)));
    labels.push_back(label);
  });
  ASSERT_EQ(probs.size(), 40000u);
  const double auc = ExactAuc(probs, labels);
  EXPECT_GE(auc, 0.72) << "planted AUC " << result->planted_test_auc;
  EXPECT_LE(auc, result->planted_test_auc + 0.01);
  std::printf("one-pass LR test AUC %.4f, planted %.4f\n", auc,
              result->planted_test_auc);
}

// The categorical tokens (fields 14..39) of every row of a pass.
std::set<std::string> PassTokens(const std::string& dir, int parts) {
  std::set<std::string> tokens;
  for (int p = 0; p < parts; ++p) {
    char name[32];
    std::snprintf(name, sizeof(name), "/part-%05d", p);
    for (const std::string& line : Lines(ReadFile(dir + name))) {
      std::vector<std::string> f = absl::StrSplit(line, '\t');
      for (size_t i = 14; i < f.size(); ++i) {
        if (!f[i].empty()) tokens.insert(absl::StrCat(i, ":", f[i]));
      }
    }
  }
  return tokens;
}

TEST(SyntheticStreamTest, WritesPassesWithMarkersAndDrifts) {
  const std::string root = TempPath("stream");
  StreamOptions o;
  o.rows_per_pass = 3001;
  o.days = 2;
  o.passes_per_day = 2;
  o.parts_per_pass = 2;
  o.drift = 0.2;
  o.start_day = "2026-12-31";  // the next day is in the next year
  absl::StatusOr<StreamResult> r = GenerateCriteoStream(o, root);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->passes,
            (std::vector<std::string>{"20261231/00", "20261231/12",
                                      "20270101/00", "20270101/12"}));
  EXPECT_EQ(r->rows, 4u * 3001);
  EXPECT_GT(r->planted_auc, 0.75);
  for (const std::string& pass : r->passes) {
    const std::string dir = root + "/" + pass;
    EXPECT_TRUE(std::ifstream(dir + "/_SUCCESS").good()) << dir;
    EXPECT_EQ(Lines(ReadFile(dir + "/part-00000")).size(), 1501u);
    EXPECT_EQ(Lines(ReadFile(dir + "/part-00001")).size(), 1500u);
  }
  // Within a day the values are the same population; the next day's
  // rotation brings values the first day never had.
  const std::set<std::string> a = PassTokens(root + "/20261231/00", 2),
                              b = PassTokens(root + "/20261231/12", 2),
                              c = PassTokens(root + "/20270101/00", 2);
  auto unseen = [&](const std::set<std::string>& day) {
    size_t n = 0;
    for (const std::string& t : day) n += !a.count(t);
    return double(n) / day.size();
  };
  EXPECT_GT(unseen(c), unseen(b) + 0.1) << unseen(b) << " " << unseen(c);
  // Deterministic in its options.
  const std::string again = TempPath("stream2");
  ASSERT_TRUE(GenerateCriteoStream(o, again).ok());
  EXPECT_EQ(ReadFile(again + "/20270101/12/part-00001"),
            ReadFile(root + "/20270101/12/part-00001"));
}

TEST(SyntheticStreamTest, RefusesBadOptions) {
  StreamOptions o;
  o.passes_per_day = 25;
  EXPECT_EQ(GenerateCriteoStream(o, TempPath("bad")).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.passes_per_day = 24;
  o.start_day = "2026-13-01";
  EXPECT_EQ(GenerateCriteoStream(o, TempPath("bad")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sampan
