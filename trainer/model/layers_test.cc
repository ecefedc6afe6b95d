// Every backward pass against central finite differences of its forward.
#include "trainer/model/layers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/dense_optimizer.h"

namespace sampan {
namespace {

Mat Random(int rows, int cols, std::mt19937* rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  Mat m(rows, cols);
  for (int i = 0; i < m.size(); ++i) m.data()[i] = u(*rng);
  return m;
}

// Checks analytic[i] against d f / d x[i] for every i in [0, n).
void ExpectGradient(const std::function<double()>& f, float* x, size_t n,
                    const float* analytic, const char* what,
                    float eps = 1e-2f) {
  for (size_t i = 0; i < n; ++i) {
    const float saved = x[i];
    x[i] = saved + eps;
    const double up = f();
    x[i] = saved - eps;
    const double down = f();
    x[i] = saved;
    const double numeric = (up - down) / (2 * eps);
    EXPECT_NEAR(analytic[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric))
        << what << "[" << i << "]";
  }
}

// The loss used to probe a layer: sum(out .* r) for a fixed random r.
double Probe(const Mat& out, const Mat& r) {
  return out.cwiseProduct(r).cast<double>().sum();
}

TEST(LinearTest, BackwardMatchesNumericalGradient) {
  std::mt19937 rng(1);
  ParamLayout layout;
  Linear linear(5, 3, &layout);
  std::vector<float> params(layout.size()), grads(layout.size(), 0.0f);
  linear.Init(&rng, params.data());
  for (float& p : params) p += 0.1f;  // non-zero bias too
  Mat x = Random(4, 5, &rng), r = Random(4, 3, &rng), y, dx;
  auto f = [&] {
    linear.Forward(params.data(), x, &y);
    return Probe(y, r);
  };
  f();
  linear.Backward(params.data(), x, r, grads.data(), &dx);
  ExpectGradient(f, params.data(), params.size(), grads.data(), "dparams");
  ExpectGradient(f, x.data(), x.size(), dx.data(), "dx");
}

TEST(ReluTest, BackwardMasksNegatives) {
  Mat y(1, 4), dy(1, 4);
  y << -1, 2, 0, 3;
  ReluForward(&y);
  EXPECT_EQ(y(0, 0), 0);
  EXPECT_EQ(y(0, 1), 2);
  dy << 5, 6, 7, 8;
  ReluBackward(y, &dy);
  EXPECT_EQ(dy(0, 0), 0);
  EXPECT_EQ(dy(0, 1), 6);
  EXPECT_EQ(dy(0, 2), 0);
  EXPECT_EQ(dy(0, 3), 8);
}

TEST(FmInteractionTest, ForwardAndBackward) {
  std::mt19937 rng(2);
  const FmInteraction fm(3, 4);
  Mat e = Random(5, 12, &rng), r = Random(5, 1, &rng), sum, out;
  fm.Forward(e, &sum, &out);
  // Direct pairwise sum for example 0.
  double direct = 0;
  for (int a = 0; a < 3; ++a)
    for (int b = a + 1; b < 3; ++b)
      for (int d = 0; d < 4; ++d) direct += e(0, a * 4 + d) * e(0, b * 4 + d);
  EXPECT_NEAR(out(0, 0), direct, 1e-5);
  Mat de = Mat::Zero(5, 12);
  fm.Backward(e, sum, r, &de);
  auto f = [&] {
    fm.Forward(e, &sum, &out);
    return Probe(out, r);
  };
  ExpectGradient(f, e.data(), e.size(), de.data(), "de");
}

TEST(CrossLayerTest, BackwardMatchesNumericalGradient) {
  std::mt19937 rng(3);
  ParamLayout layout;
  CrossLayer cross(6, &layout);
  std::vector<float> params(layout.size()), grads(layout.size(), 0.0f);
  cross.Init(&rng, params.data());
  for (float& p : params) p += 0.05f;
  Mat x0 = Random(3, 6, &rng), x = Random(3, 6, &rng), r = Random(3, 6, &rng);
  Mat u, y, dx;
  Mat dx0 = Mat::Zero(3, 6);
  auto f = [&] {
    cross.Forward(params.data(), x0, x, &u, &y);
    return Probe(y, r);
  };
  f();
  cross.Backward(params.data(), x0, x, u, r, grads.data(), &dx0, &dx);
  ExpectGradient(f, params.data(), params.size(), grads.data(), "dparams");
  ExpectGradient(f, x0.data(), x0.size(), dx0.data(), "dx0");
  ExpectGradient(f, x.data(), x.size(), dx.data(), "dx");
}

TEST(SigmoidCrossEntropyTest, GradientIsPMinusY) {
  Mat logits(3, 1), d;
  logits << -2, 0.5, 40;  // 40 is clamped
  const float labels[3] = {1, 0, 1};
  float probs[3];
  double loss = SigmoidCrossEntropy(logits, labels, probs, &d);
  EXPECT_NEAR(loss,
              std::log1p(std::exp(2.0)) + std::log1p(std::exp(0.5)) +
                  std::log1p(std::exp(-30.0)),
              1e-5);
  EXPECT_NEAR(d(0, 0), probs[0] - 1, 1e-7);
  std::vector<float> grads = {float(d(0, 0)), float(d(1, 0))};
  auto f = [&] {
    Mat scratch;
    return SigmoidCrossEntropy(logits, labels, probs, &scratch);
  };
  ExpectGradient(f, logits.data(), 2, grads.data(), "dlogits");
}

TEST(SumPoolTest, PoolsPerSlotAndScattersBack) {
  // Example 0: slots 1, 2, 2 (multi-valued); example 1: slot 2 and slot 9
  // (outside the 2 fields, skipped).
  const uint32_t offsets[] = {0, 3, 5};
  const uint16_t slots[] = {1, 2, 2, 2, 9};
  const uint32_t row_of_sign[] = {0, 1, 2, 1, 0};
  const std::vector<float> rows = {0, 1, 2, /**/ 0, 3, 4, /**/ 0, 5, 6};
  const PoolingInput in{offsets, slots, row_of_sign, 2};
  Mat e;
  SumPoolForward(in, rows.data(), 3, 2, 2, &e);
  Mat expected(2, 4);
  expected << 1, 2, 8, 10, 0, 0, 3, 4;
  EXPECT_EQ(e, expected);
  Mat de(2, 4);
  de << 1, 1, 2, 2, 5, 5, 7, 7;
  std::vector<float> grads(9, 0.0f);
  SumPoolBackward(in, de, 3, 2, 2, grads.data());
  EXPECT_EQ(grads, (std::vector<float>{0, 1, 1, 0, 9, 9, 0, 2, 2}));
}

// 3 fields x 2 (or x dim), MLP 4-3, 2 cross layers (DCN-v2); with
// dense_inputs > 0 every example also carries that many dense inputs.
CtrModelOptions SmallModel(CtrKind kind, int dense_inputs = 0,
                           std::vector<int> field_dims = {}, int dim = 2) {
  CtrModelOptions o;
  o.kind = kind;
  o.dense_inputs = dense_inputs;
  o.field_dims = std::move(field_dims);
  o.fields = 3;
  o.embedding_dim = dim;
  o.hidden = {4, 3};
  o.cross_layers = 2;
  return o;
}

// The whole model: sparse-row and dense gradients of the summed loss.
void CheckModel(CtrKind kind, int dense_inputs = 0,
                std::vector<int> field_dims = {}, int dim = 2) {
  SCOPED_TRACE(absl::StrCat("embedding dim ", dim));
  CtrModel model(SmallModel(kind, dense_inputs, std::move(field_dims), dim));
  std::mt19937 rng(4);
  Batch batch;
  batch.Clear();
  // Three examples over 4 keys; row 4 is the bias.
  const std::vector<std::vector<std::pair<uint16_t, uint32_t>>> ex = {
      {{1, 0}, {2, 1}, {3, 2}}, {{1, 3}, {2, 1}, {2, 2}}, {{3, 0}}};
  std::vector<uint32_t> row_of_sign;
  for (size_t i = 0; i < ex.size(); ++i) {
    for (auto [slot, row] : ex[i]) {
      batch.signs.push_back(row);
      batch.slots.push_back(slot);
      row_of_sign.push_back(row);
    }
    batch.offsets.push_back(batch.signs.size());
    batch.labels.push_back(i % 2);
    for (int d = 0; d < dense_inputs; ++d) batch.dense.push_back(0.3f * d - i);
  }
  batch.dense_dim = dense_inputs;
  const int rd = model.row_dim();
  std::uniform_real_distribution<float> u(-0.5, 0.5);
  std::vector<float> rows(5 * rd), sgrads(5 * rd, 0.0f);
  for (float& r : rows) r = u(rng);
  std::vector<float> dense(model.dense_size()), dgrads(dense.size(), 0.0f);
  model.InitDense(dense.data());
  for (float& d : dense) d += 0.05f * u(rng);
  float probs[3];
  CtrModel::Workspace ws;
  model.Step(batch, row_of_sign, 4, rows.data(), dense.data(), sgrads.data(),
             dgrads.data(), probs, &ws);
  auto f = [&] {
    CtrModel::Workspace w;
    return model.Step(batch, row_of_sign, 4, rows.data(), dense.data(), nullptr,
                      nullptr, probs, &w);
  };
  // A small step: ReLU kinks must not fall inside it.
  ExpectGradient(f, rows.data(), rows.size(), sgrads.data(), "sparse", 1e-3f);
  ExpectGradient(f, dense.data(), dense.size(), dgrads.data(), "dense", 1e-3f);
}

TEST(CtrModelTest, LrGradients) { CheckModel(CtrKind::kLr); }
TEST(CtrModelTest, FmGradients) { CheckModel(CtrKind::kFm); }
TEST(CtrModelTest, DnnGradients) { CheckModel(CtrKind::kDnn); }
TEST(CtrModelTest, WideDeepGradients) { CheckModel(CtrKind::kWideDeep); }
TEST(CtrModelTest, DeepFmGradients) { CheckModel(CtrKind::kDeepFm); }
TEST(CtrModelTest, DcnV2Gradients) { CheckModel(CtrKind::kDcnV2); }
TEST(CtrModelTest, PerFieldWidthGradients) {
  for (CtrKind k : {CtrKind::kDnn, CtrKind::kWideDeep, CtrKind::kDcnV2}) {
    SCOPED_TRACE(int(k));
    CheckModel(k, 0, {1, 0, 2});
    CheckModel(k, 2, {2, 1});
  }
  CtrModelOptions o;
  o.kind = CtrKind::kDnn;
  o.fields = 3;
  o.embedding_dim = 4;
  o.hidden = {5};
  o.field_dims = {1, 2};  // the third field keeps 4
  EXPECT_EQ(CtrModel(o).DenseBlocks()[0].rows, 1 + 2 + 4);
}

TEST(CtrModelTest, DenseInputGradients) {
  for (CtrKind k : {CtrKind::kLr, CtrKind::kFm, CtrKind::kDnn, CtrKind::kDeepFm,
                    CtrKind::kDcnV2}) {
    SCOPED_TRACE(int(k));
    CheckModel(k, 3);
  }
}

// The per-layer hook: every dense weight in one block, blocks reported in
// order, each once, and already final when reported.
void CheckGradReady(CtrKind kind) {
  CtrModel model(SmallModel(kind));
  const std::vector<CtrModel::GradBlock> blocks = model.GradBlocks();
  std::vector<int> covered(model.dense_size(), 0);
  for (const CtrModel::GradBlock& b : blocks) {
    for (size_t i = b.offset; i < b.offset + b.count; ++i) ++covered[i];
  }
  EXPECT_EQ(std::count(covered.begin(), covered.end(), 1),
            static_cast<long>(covered.size()));
  Batch batch;
  batch.Clear();
  std::vector<uint32_t> row_of_sign = {0, 1, 2, 3, 1};
  for (uint16_t slot : {1, 2, 3, 1, 2}) batch.slots.push_back(slot);
  batch.signs = {0, 1, 2, 3, 1};
  batch.offsets.push_back(3);
  batch.offsets.push_back(5);
  batch.labels = {1, 0};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-0.5, 0.5);
  std::vector<float> rows(5 * model.row_dim()), sgrads(rows.size(), 0.0f);
  for (float& r : rows) r = u(rng);
  std::vector<float> dense(model.dense_size()), dgrads(dense.size(), 0.0f);
  model.InitDense(dense.data());
  std::vector<int> order;
  std::vector<std::vector<float>> seen;
  float probs[2];
  CtrModel::Workspace ws;
  model.Step(batch, row_of_sign, 4, rows.data(), dense.data(), sgrads.data(),
             dgrads.data(), probs, &ws, [&](int b) {
               order.push_back(b);
               const float* g = dgrads.data() + blocks[b].offset;
               seen.emplace_back(g, g + blocks[b].count);
             });
  ASSERT_EQ(order.size(), blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b) {
    EXPECT_EQ(order[b], static_cast<int>(b));
    const float* g = dgrads.data() + blocks[b].offset;
    EXPECT_EQ(seen[b], std::vector<float>(g, g + blocks[b].count))
        << "block " << b << " changed after it was reported ready";
  }
}

TEST(CtrModelTest, GradReadyDnn) { CheckGradReady(CtrKind::kDnn); }
TEST(CtrModelTest, GradReadyDcnV2) { CheckGradReady(CtrKind::kDcnV2); }

// FM's fused per-example step computes what the layers compose: the wide
// sum over every sign, and the pairwise term over per-field sums (a field
// seen twice in an example pools first; slots outside [1, fields] skipped).
void FusedFmMatchesLayers(int dim) {
  SCOPED_TRACE(absl::StrCat("embedding dim ", dim));
  CtrModel model(SmallModel(CtrKind::kFm, 0, {}, dim));
  Batch batch;
  batch.Clear();
  const std::vector<std::vector<std::pair<uint16_t, uint32_t>>> ex = {
      {{1, 0}, {2, 1}, {2, 2}, {7, 3}}, {{3, 2}, {1, 3}}, {}};
  std::vector<uint32_t> row_of_sign;
  for (const auto& signs : ex) {
    for (auto [slot, row] : signs) {
      batch.slots.push_back(slot);
      batch.signs.push_back(row);
      row_of_sign.push_back(row);
    }
    batch.offsets.push_back(batch.signs.size());
    batch.labels.push_back(1);
  }
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> rows(5 * model.row_dim());  // row 4: the bias
  for (float& r : rows) r = u(rng);
  float probs[3];
  CtrModel::Workspace ws;
  model.Step(batch, row_of_sign, 4, rows.data(), nullptr, nullptr, nullptr,
             probs, &ws);
  const PoolingInput in{batch.offsets.data(), batch.slots.data(),
                        row_of_sign.data(), 3};
  Mat e, sum, fm;
  SumPoolForward(in, rows.data(), model.row_dim(), 3, dim, &e);
  FmInteraction(3, dim).Forward(e, &sum, &fm);
  for (size_t i = 0; i < 3; ++i) {
    float logit = rows[4 * model.row_dim()] + fm(i, 0);
    for (uint32_t j = batch.offsets[i]; j < batch.offsets[i + 1]; ++j) {
      logit += rows[row_of_sign[j] * model.row_dim()];
    }
    EXPECT_NEAR(probs[i], 1 / (1 + std::exp(-logit)), 1e-6) << i;
  }
}

TEST(CtrModelTest, FusedFmMatchesLayers) {
  for (int dim : {2, 4, 8, 16}) FusedFmMatchesLayers(dim);
}

// FM's fused step on both its paths (examples 0 and 2 have one sign per
// field and skip the per-field buffer; example 1 pools field 2), at
// several widths and with dense inputs.
TEST(CtrModelTest, FmGradientsAtSeveralWidths) {
  for (int dim : {3, 4, 8, 16}) CheckModel(CtrKind::kFm, 0, {}, dim);
  CheckModel(CtrKind::kFm, 2, {}, 8);
}

TEST(CtrModelTest, DenseSizeCountsEveryLayer) {
  CtrModelOptions o;
  o.kind = CtrKind::kDcnV2;
  o.fields = 2;
  o.embedding_dim = 3;
  o.hidden = {4};
  o.cross_layers = 1;
  // cross 6x6+6, hidden 6x4+4, output 4x1+1.
  EXPECT_EQ(CtrModel(o).dense_size(), 42u + 28u + 5u);
  o.kind = CtrKind::kFm;
  EXPECT_EQ(CtrModel(o).dense_size(), 0u);
}

// Each rule minimises f(p) = 1/2 |p - 3|^2 from p = 0.
void ExpectConverges(DenseRule rule, float lr) {
  DenseOptimizerOptions o;
  o.rule = rule;
  o.learning_rate = lr;
  auto opt = DenseOptimizer::Create(o, 2);
  float p[2] = {0, 0}, g[2];
  for (int step = 0; step < 2000; ++step) {
    for (int i = 0; i < 2; ++i) g[i] = p[i] - 3;
    opt->Apply(p, g);
  }
  EXPECT_NEAR(p[0], 3, 1e-2);
  EXPECT_NEAR(p[1], 3, 1e-2);
}

TEST(DenseOptimizerTest, SgdStepIsExact) {
  DenseOptimizerOptions o;
  o.rule = DenseRule::kSgd;
  o.learning_rate = 0.5f;
  auto opt = DenseOptimizer::Create(o, 1);
  float p = 1, g = 4;
  opt->Apply(&p, &g);
  EXPECT_FLOAT_EQ(p, -1);
}
TEST(DenseOptimizerTest, SgdConverges) {
  ExpectConverges(DenseRule::kSgd, 0.1f);
}
TEST(DenseOptimizerTest, AdagradConverges) {
  ExpectConverges(DenseRule::kAdagrad, 0.5f);
}
TEST(DenseOptimizerTest, AdamConverges) {
  ExpectConverges(DenseRule::kAdam, 0.05f);
}

}  // namespace
}  // namespace sampan
