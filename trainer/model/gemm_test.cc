#include "trainer/model/gemm.h"

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sampan {
namespace {

struct Shape {
  int m, n, k;
};

// op(A) op(B) in double, from the stored layouts Gemm documents.
std::vector<double> Reference(bool ta, bool tb, const Shape& s,
                              const std::vector<float>& a,
                              const std::vector<float>& b) {
  std::vector<double> c(size_t(s.m) * s.n, 0.0);
  for (int i = 0; i < s.m; ++i) {
    for (int j = 0; j < s.n; ++j) {
      double sum = 0;
      for (int p = 0; p < s.k; ++p) {
        const float av = ta ? a[size_t(p) * s.m + i] : a[size_t(i) * s.k + p];
        const float bv = tb ? b[size_t(j) * s.k + p] : b[size_t(p) * s.n + j];
        sum += double(av) * bv;
      }
      c[size_t(i) * s.n + j] = sum;
    }
  }
  return c;
}

std::vector<DenseIsa> IsasOfThisCpu() {
  std::vector<DenseIsa> isas = {DenseIsa::kAvx2};
  if (CpuHasAvx512()) isas.push_back(DenseIsa::kAvx512);
  return isas;
}

TEST(GemmTest, EveryLayoutMatchesADoubleReference) {
  // Odd sizes exercise every remainder path of the packed kernels; the last
  // is the DeepFM first layer's shape.
  const Shape shapes[] = {
      {1, 1, 1}, {7, 13, 5}, {33, 17, 65}, {3, 400, 2}, {100, 400, 624}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (DenseIsa isa : IsasOfThisCpu()) {
    for (const Shape& s : shapes) {
      for (int layout = 0; layout < 8; ++layout) {
        const bool ta = layout & 1, tb = layout & 2, acc = layout & 4;
        std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.k) * s.n),
            c(size_t(s.m) * s.n);
        for (float& x : a) x = u(rng);
        for (float& x : b) x = u(rng);
        for (float& x : c) x = u(rng);
        std::vector<double> want = Reference(ta, tb, s, a, b);
        if (acc) {
          for (size_t i = 0; i < c.size(); ++i) want[i] += c[i];
        }
        GemmOn(isa, ta, tb, s.m, s.n, s.k, a.data(), b.data(), acc, c.data());
        for (size_t i = 0; i < c.size(); ++i) {
          // float sums of k products of magnitude <= 1.
          ASSERT_NEAR(c[i], want[i], 1e-6 * s.k + 1e-6)
              << DenseIsaName(isa) << " m=" << s.m << " n=" << s.n
              << " k=" << s.k << " ta=" << ta << " tb=" << tb
              << " accumulate=" << acc << " at " << i;
        }
      }
    }
  }
}

TEST(GemmTest, EmptyInnerDimensionZeroesOrKeeps) {
  for (DenseIsa isa : IsasOfThisCpu()) {
    std::vector<float> c = {1, 2, 3, 4, 5, 6};
    GemmOn(isa, false, false, 2, 3, 0, nullptr, nullptr, true, c.data());
    EXPECT_EQ(c, (std::vector<float>{1, 2, 3, 4, 5, 6})) << DenseIsaName(isa);
    GemmOn(isa, false, false, 2, 3, 0, nullptr, nullptr, false, c.data());
    EXPECT_EQ(c, std::vector<float>(6, 0.0f)) << DenseIsaName(isa);
    // No rows: nothing is written (c may be null).
    GemmOn(isa, false, false, 0, 3, 4, nullptr, nullptr, false, nullptr);
  }
}

TEST(GemmTest, ThisProcessRunsTheWidestCopyAndBothAgreeToRounding) {
  const char* env = std::getenv("SAMPAN_DENSE_ISA");
  if (env == nullptr) {
    // Unset (as under bazel test): the widest copy this CPU runs.
    EXPECT_EQ(ActiveDenseIsa(),
              CpuHasAvx512() ? DenseIsa::kAvx512 : DenseIsa::kAvx2);
  } else {
    std::string warning;
    EXPECT_EQ(ActiveDenseIsa(), ChooseDenseIsa(env, CpuHasAvx512(), &warning));
  }
  if (!CpuHasAvx512()) return;  // one copy here: the layouts test ran it
  const Shape s = {100, 400, 624};
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.k) * s.n);
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  std::vector<float> c2(size_t(s.m) * s.n), c5(c2.size());
  GemmOn(DenseIsa::kAvx2, false, false, s.m, s.n, s.k, a.data(), b.data(),
         false, c2.data());
  GemmOn(DenseIsa::kAvx512, false, false, s.m, s.n, s.k, a.data(), b.data(),
         false, c5.data());
  double worst = 0;
  for (size_t i = 0; i < c2.size(); ++i) {
    worst = std::max(worst, double(std::fabs(c2[i] - c5[i])));
  }
  EXPECT_LT(worst, 1e-3);
  EXPECT_GT(worst, 0.0) << "the two copies ran the same code";
}

TEST(GemmTest, ChoosesTheWidestUnlessToldOtherwise) {
  std::string warning;
  EXPECT_EQ(ChooseDenseIsa(nullptr, true, &warning), DenseIsa::kAvx512);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(ChooseDenseIsa("", false, &warning), DenseIsa::kAvx2);
  EXPECT_EQ(ChooseDenseIsa("avx2", true, &warning), DenseIsa::kAvx2);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(ChooseDenseIsa("avx512", true, &warning), DenseIsa::kAvx512);
  EXPECT_EQ(ChooseDenseIsa(" AVX2\n", true, &warning), DenseIsa::kAvx2);
  EXPECT_EQ(warning, "");
  EXPECT_EQ(ChooseDenseIsa("avx512", false, &warning), DenseIsa::kAvx2);
  EXPECT_NE(warning.find("lacks AVX-512"), std::string::npos) << warning;
  // A value that names no copy: the narrower one, since whoever set the
  // variable wanted less than the widest.
  EXPECT_EQ(ChooseDenseIsa("sse", true, &warning), DenseIsa::kAvx2);
  EXPECT_NE(warning.find("SAMPAN_DENSE_ISA=sse is not one of avx2, avx512"),
            std::string::npos)
      << warning;
}

}  // namespace
}  // namespace sampan
