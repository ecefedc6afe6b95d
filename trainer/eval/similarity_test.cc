#include "trainer/eval/similarity.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace sampan {
namespace {

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SpearmanTest, HandWorkedValues) {
  EXPECT_DOUBLE_EQ(Spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1);
  EXPECT_DOUBLE_EQ(Spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1);
  // 1 - 6 * sum d^2 / (n (n^2 - 1)) = 1 - 12 / 60.
  EXPECT_NEAR(Spearman({1, 2, 3, 4}, {1, 3, 2, 4}), 0.8, 1e-12);
  // Ties take their mean rank: 4.5 / sqrt(4.5 * 5).
  EXPECT_NEAR(Spearman({1, 2, 2, 3}, {1, 2, 3, 4}), 4.5 / std::sqrt(22.5),
              1e-12);
  EXPECT_EQ(Spearman({1, 1, 1}, {1, 2, 3}), 0);
  EXPECT_EQ(Spearman({1}, {1}), 0);
}

TEST(SimilarityTest, ScoresCosineRanksAndCountsBadRows) {
  const std::string vec = Write("v.vec",
                                "4 2\n"
                                "cat 1 0\n"
                                "dog 1 0.05\n"
                                "car 0 1\n"
                                "bad 1 x\n"
                                "short 1\n"
                                "truck 0.1 1\n");
  const std::string pairs = Write("p.tsv",
                                  "# a comment\n"
                                  "cat\tdog\t9\n"
                                  "car\ttruck\t8\n"
                                  "cat\tcar\t1\n"
                                  "\n"
                                  "cat dog\n"
                                  "dog\tzebra\t5\n"
                                  "dog truck nan\n");
  absl::StatusOr<WordVectors> v = ReadWordVectors(vec);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->dim, 2);
  EXPECT_EQ(v->vectors.size(), 4u);
  EXPECT_EQ(v->bad_lines, 2u);
  ASSERT_EQ(v->errors.size(), 2u);
  EXPECT_EQ(v->errors[0], vec + ":5: a value is not a finite number");
  EXPECT_NE(v->errors[1].find(":6: expected a word and 2 numbers"),
            std::string::npos);
  absl::StatusOr<WordPairs> p = ReadWordPairs(pairs);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->pairs.size(), 4u);
  EXPECT_EQ(p->bad_lines, 2u);
  EXPECT_NE(p->errors[0].find(":6: expected \"word1 word2 score\""),
            std::string::npos);
  const SimilarityScore s = ScoreSimilarity(*v, *p);
  EXPECT_EQ(s.pairs_scored, 3u);
  EXPECT_EQ(s.pairs_missing, 1u);
  EXPECT_NEAR(s.spearman, 1.0, 1e-12);  // cosines rank as the scores do
}

TEST(SimilarityTest, RefusesAFileWithoutTheHeader) {
  const std::string vec = Write("h.vec", "cat 1 0\n");
  absl::StatusOr<WordVectors> v = ReadWordVectors(vec);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find(":1: expected \"count dim\""),
            std::string::npos);
  EXPECT_FALSE(ReadWordVectors(vec + ".missing").ok());
  EXPECT_FALSE(ReadWordVectors(Write("e.vec", "")).ok());
}

}  // namespace
}  // namespace sampan
