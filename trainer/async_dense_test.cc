#include "trainer/async_dense.h"

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

CtrModelOptions SmallDeepFm() {
  CtrModelOptions o;
  o.kind = CtrKind::kDeepFm;
  o.fields = 3;
  o.embedding_dim = 4;
  o.hidden = {5};
  return o;
}

TEST(AsyncDenseTest, RowsHoldOffsetsFromTheModelsInitialisation) {
  const CtrModel model(SmallDeepFm());
  const int row_dim = 5;
  const AsyncDense dense(model, row_dim);
  ASSERT_EQ(dense.size(), model.dense_size());
  EXPECT_EQ(dense.keys().size(), (dense.size() + row_dim - 1) / row_dim);
  absl::flat_hash_set<uint64_t> unique(dense.keys().begin(),
                                       dense.keys().end());
  EXPECT_EQ(unique.size(), dense.keys().size());

  std::vector<float> init(model.dense_size());
  model.InitDense(init.data());
  std::vector<float> rows(dense.keys().size() * row_dim, 0.0f);
  std::vector<float> weights(dense.size());
  dense.Weights(rows.data(), weights.data());
  EXPECT_EQ(weights, init);  // fresh rows (zeros) are the initialisation
  rows[3] = 0.5f;
  dense.Weights(rows.data(), weights.data());
  EXPECT_FLOAT_EQ(weights[3], init[3] + 0.5f);
}

// The batch's summed gradient goes out scaled (by 1 / batch size: the
// mean), and the last row's tail past the weights is zero.
TEST(AsyncDenseTest, GradRowsAreTheScaledGradientWithAZeroTail) {
  const CtrModel model(SmallDeepFm());
  const int row_dim = 7;
  const AsyncDense dense(model, row_dim);
  std::vector<float> grads(dense.size());
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.25f * (i + 1);
  std::vector<float> rows(dense.keys().size() * row_dim, -1.0f);
  dense.GradRows(grads.data(), 0.5f, rows.data());
  for (size_t i = 0; i < grads.size(); ++i) {
    ASSERT_EQ(rows[i], 0.5f * grads[i]) << i;
  }
  for (size_t i = grads.size(); i < rows.size(); ++i) EXPECT_EQ(rows[i], 0.0f);
}

}  // namespace
}  // namespace sampan
