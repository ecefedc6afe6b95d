#include "trainer/model/fm.h"

#include <cmath>
#include <random>

#include "gtest/gtest.h"

namespace sampan {
namespace {

// Two examples over four distinct rows (row 0 is the bias).
struct Fixture {
  Batch batch;
  std::vector<uint32_t> row_of_sign;
  std::vector<float> rows;
};

Fixture Make(uint32_t dim) {
  Fixture f;
  f.batch.Clear();
  f.batch.labels = {1, 0};
  f.batch.signs = {101, 102, 103, 102};
  f.batch.offsets = {0, 3, 4};
  f.row_of_sign = {1, 2, 3, 2};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  f.rows.resize(4 * (dim + 1));
  for (float& x : f.rows) x = u(rng);
  return f;
}

double Loss(const FmModel& m, const Fixture& f,
            const std::vector<float>& rows) {
  std::vector<float> probs(2);
  return m.Step(f.batch, f.row_of_sign, 0, rows.data(), nullptr, probs.data());
}

TEST(FmModelTest, LogitMatchesDefinition) {
  FmModel m(2);
  Fixture f = Make(2);
  std::vector<float> probs(2);
  m.Step(f.batch, f.row_of_sign, 0, f.rows.data(), nullptr, probs.data());
  auto row = [&](int r) { return &f.rows[r * 3]; };
  // Example 0 uses rows 1, 2, 3: pairwise dot products of their embeddings.
  auto dot = [&](int a, int b) {
    return row(a)[1] * row(b)[1] + row(a)[2] * row(b)[2];
  };
  const float logit = row(0)[0] + row(1)[0] + row(2)[0] + row(3)[0] +
                      dot(1, 2) + dot(1, 3) + dot(2, 3);
  EXPECT_NEAR(probs[0], 1 / (1 + std::exp(-logit)), 1e-6);
}

TEST(FmModelTest, GradientsMatchFiniteDifferences) {
  for (uint32_t dim : {0u, 3u}) {
    FmModel m(dim);
    Fixture f = Make(dim);
    std::vector<float> grads(f.rows.size(), 0.0f), probs(2);
    m.Step(f.batch, f.row_of_sign, 0, f.rows.data(), grads.data(),
           probs.data());
    for (size_t i = 0; i < f.rows.size(); ++i) {
      std::vector<float> plus = f.rows, minus = f.rows;
      const float h = 1e-3f;
      plus[i] += h;
      minus[i] -= h;
      const double numeric = (Loss(m, f, plus) - Loss(m, f, minus)) / (2 * h);
      EXPECT_NEAR(grads[i], numeric, 2e-3) << "dim " << dim << " param " << i;
    }
  }
}

}  // namespace
}  // namespace sampan
