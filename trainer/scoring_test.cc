#include "trainer/scoring.h"

#include "gtest/gtest.h"

namespace sampan {
namespace {

CtrModel Model(CtrKind kind, int dim) {
  CtrModelOptions o;
  o.kind = kind;
  o.fields = 39;
  o.embedding_dim = dim;
  o.hidden = {400, 400, 400};
  return CtrModel(o);
}

TEST(ScoringParts, DeepModelsGoToThePoolFromTwoExamples) {
  const CtrModel deepfm = Model(CtrKind::kDeepFm, 16);  // ~0.58 M MACs each
  EXPECT_EQ(ScoringParts(deepfm, 1, 2), 0);
  EXPECT_EQ(ScoringParts(deepfm, 2, 2), 1);
  EXPECT_EQ(ScoringParts(deepfm, 31, 2), 1);
  EXPECT_EQ(ScoringParts(deepfm, 32, 2), 2);  // parts of >= 16 examples
  EXPECT_EQ(ScoringParts(deepfm, 100, 2), 2);
  EXPECT_EQ(ScoringParts(deepfm, 100, 4), 4);
  EXPECT_EQ(ScoringParts(deepfm, 100, 16), 6);
  EXPECT_EQ(ScoringParts(deepfm, 100, 1), 1);
  EXPECT_EQ(ScoringParts(deepfm, 100, 0), 0);
  EXPECT_EQ(ScoringParts(Model(CtrKind::kDcnV2, 16), 100, 2), 2);
}

TEST(ScoringParts, CheapModelsStayOnTheCallerBelowThousands) {
  const CtrModel fm = Model(CtrKind::kFm, 16);  // 39 x 17 MACs each
  EXPECT_EQ(ScoringParts(fm, 1, 2), 0);
  EXPECT_EQ(ScoringParts(fm, 1000, 2), 0);
  EXPECT_EQ(ScoringParts(fm, 2000, 2), 1);
  EXPECT_EQ(ScoringParts(fm, 10000, 2), 2);
  EXPECT_EQ(ScoringParts(Model(CtrKind::kLr, 0), 10000, 2), 0);
}

}  // namespace
}  // namespace sampan
