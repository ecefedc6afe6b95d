// Row formats: the half-float and int8 codecs against IEEE 754 values and
// arithmetic worked out here, and the two roundings' promises (nearest:
// within half a step; stochastic: one of the two neighbours, unbiased).
#include "common/row_format.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "absl/base/casts.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(FloatToHalf(1.0f, Rounding::kNearest, 0), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f, Rounding::kNearest, 0), 0xc000);
  EXPECT_EQ(FloatToHalf(0.0f, Rounding::kNearest, 0), 0x0000);
  EXPECT_EQ(FloatToHalf(65504.0f, Rounding::kNearest, 0), 0x7bff);
  EXPECT_EQ(FloatToHalf(1e6f, Rounding::kNearest, 0), 0x7bff);  // saturates
  EXPECT_EQ(FloatToHalf(-1e6f, Rounding::kNearest, 0), 0xfbff);
  EXPECT_EQ(FloatToHalf(0x1.0p-24f, Rounding::kNearest, 0), 0x0001);
  EXPECT_EQ(FloatToHalf(0x1.0p-14f, Rounding::kNearest, 0), 0x0400);
  EXPECT_EQ(HalfToFloat(0x3555), 0x1.554p-2f);  // 0.333251953125
  EXPECT_EQ(HalfToFloat(0x0001), 0x1.0p-24f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_TRUE(std::isinf(HalfToFloat(0x7c00)));
  // Every finite half survives a round trip under either rounding.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    const float f = HalfToFloat(h);
    ASSERT_EQ(FloatToHalf(f, Rounding::kNearest, 0), h) << h;
    ASSERT_EQ(FloatToHalf(f, Rounding::kStochastic, 0.999f), h) << h;
  }
}

TEST(HalfTest, NearestIsWithinHalfAStepAndTiesGoToEven) {
  // 1 + 2^-11 is halfway between 1 (even code) and 1 + 2^-10.
  EXPECT_EQ(FloatToHalf(1.0f + 0x1.0p-11f, Rounding::kNearest, 0), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 3 * 0x1.0p-11f, Rounding::kNearest, 0), 0x3c02);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-100, 100);
  for (int i = 0; i < 100000; ++i) {
    const float f = dist(rng) * std::pow(10.0f, float(i % 7) - 5);
    const float back = HalfToFloat(FloatToHalf(f, Rounding::kNearest, 0));
    // Relative half step of a normal half (2^-11), or half the subnormal
    // quantum (2^-25).
    const float tol = std::max(std::fabs(f) * 0x1.0p-11f, 0x1.0p-25f);
    ASSERT_LE(std::fabs(back - f), tol * 1.0001f) << f;
  }
}

TEST(HalfTest, StochasticPicksANeighbourAndIsUnbiased) {
  const float x = 1.0f + 0.3f * 0x1.0p-10f;  // 30% of a step above 1
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(0, 1);
  double sum = 0;
  int ups = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const uint16_t h = FloatToHalf(x, Rounding::kStochastic, u(rng));
    ASSERT_TRUE(h == 0x3c00 || h == 0x3c01) << h;
    ups += h == 0x3c01;
    sum += HalfToFloat(h);
  }
  EXPECT_NEAR(double(ups) / n, 0.3, 0.005);
  EXPECT_NEAR(sum / n, x, 0.005 * 0x1.0p-10);
  // Negative numbers round by magnitude alike.
  EXPECT_EQ(FloatToHalf(-x, Rounding::kStochastic, 0.1f), 0xbc01);
  EXPECT_EQ(FloatToHalf(-x, Rounding::kStochastic, 0.5f), 0xbc00);
}

TEST(RowFormatTest, ParsesNamesInAnyCase) {
  EXPECT_EQ(ParseRowFormat("INT8"), RowFormat::kInt8);
  EXPECT_EQ(ParseRowFormat("fp16"), RowFormat::kFp16);
  EXPECT_EQ(ParseRowFormat("Fp32"), RowFormat::kFp32);
  EXPECT_EQ(ParseRowFormat("int4"), std::nullopt);
  EXPECT_EQ(ParseRowFormat(""), std::nullopt);
  EXPECT_EQ(ParseRowFormat("INT88"), std::nullopt);
}

TEST(EmbeddingTest, WordsPerFormat) {
  EXPECT_EQ(EmbeddingWords(RowFormat::kFp32, 16), 16u);
  EXPECT_EQ(EmbeddingWords(RowFormat::kFp16, 16), 8u);
  EXPECT_EQ(EmbeddingWords(RowFormat::kFp16, 9), 5u);
  EXPECT_EQ(EmbeddingWords(RowFormat::kInt8, 16), 5u);
  EXPECT_EQ(EmbeddingWords(RowFormat::kInt8, 9), 4u);
  EXPECT_EQ(EmbeddingWords(RowFormat::kInt8, 0), 0u);
  EXPECT_STREQ(RowFormatName(RowFormat::kInt8), "INT8");
}

std::vector<float> RoundTrip(RowFormat f, Rounding r, uint64_t seed,
                             const std::vector<float>& v,
                             std::vector<float>* words_out = nullptr) {
  std::vector<float> words(EmbeddingWords(f, v.size()) + 1, 123.0f);
  EncodeEmbedding(f, r, seed, v.data(), v.size(), words.data());
  EXPECT_EQ(words.back(), 123.0f) << "wrote past its words";
  words.pop_back();
  std::vector<float> back(v.size());
  DecodeEmbedding(f, words.data(), v.size(), back.data());
  if (words_out != nullptr) *words_out = words;
  return back;
}

// EncodeEmbedding converts normal halves by adding to the dropped bits:
// the same codes as FloatToHalf under nearest rounding, and under
// stochastic rounding one of the two neighbours, unbiased.
TEST(EmbeddingTest, Fp16EncodingMatchesTheGeneralConversion) {
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::vector<float> v(4096);
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = mantissa(rng) * std::ldexp(1.0f, int(i % 40) - 28);  // 2^-28..2^11
  }
  v[0] = 65504.0f;
  v[1] = 65519.0f;  // rounds to 65504 (nearest) or saturates there
  v[2] = -1e9f;
  v[3] = 0x1.0p-14f;
  v[4] = 0x1.ffcp-15f;  // the largest subnormal
  std::vector<float> words(EmbeddingWords(RowFormat::kFp16, v.size()));
  EncodeEmbedding(RowFormat::kFp16, Rounding::kNearest, 1, v.data(), v.size(),
                  words.data());
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, reinterpret_cast<const char*>(words.data()) + 2 * i, 2);
    ASSERT_EQ(h, FloatToHalf(v[i], Rounding::kNearest, 0)) << v[i];
  }
  std::vector<float> back(v.size());
  double sum = 0;
  const int n = 4000;
  const float x = 3.0f + 0.7f * 0x1.0p-9f;  // 70% of a step above 3
  std::vector<float> xs(64, x);
  for (int seed = 0; seed < n / 64; ++seed) {
    EncodeEmbedding(RowFormat::kFp16, Rounding::kStochastic, seed, xs.data(),
                    xs.size(), words.data());
    DecodeEmbedding(RowFormat::kFp16, words.data(), xs.size(), back.data());
    for (size_t i = 0; i < xs.size(); ++i) {
      ASSERT_TRUE(back[i] == 3.0f || back[i] == 3.0f + 0x1.0p-9f) << back[i];
      sum += back[i];
    }
  }
  EXPECT_NEAR(sum / (n / 64 * 64), x, 0.02 * 0x1.0p-9);
}

// DecodeEmbedding (eight at a time with F16C where the CPU has it) gives
// HalfToFloat's float, bit for bit, for every code but the signalling
// NaNs, which the encoder never writes; and any length, odd ones included.
TEST(EmbeddingTest, Fp16DecodingEqualsHalfToFloatForEveryCode) {
  std::vector<uint16_t> codes;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const bool signalling_nan =
        (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0 && (h & 0x200) == 0;
    if (!signalling_nan) codes.push_back(uint16_t(h));
  }
  for (size_t n : {codes.size(), size_t{1}, size_t{7}, size_t{8}, size_t{13},
                   size_t{17}}) {
    std::vector<float> words((n + 1) / 2);
    std::memcpy(words.data(), codes.data(), 2 * n);
    std::vector<float> v(n);
    DecodeEmbedding(RowFormat::kFp16, words.data(), uint32_t(n), v.data());
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(absl::bit_cast<uint32_t>(v[i]),
                absl::bit_cast<uint32_t>(HalfToFloat(codes[i])))
          << "code 0x" << std::hex << codes[i] << " of " << std::dec << n;
    }
  }
}

TEST(EmbeddingTest, Int8KeepsTheLargestExactAndTheRestWithinAStep) {
  const std::vector<float> v = {0.5f, -0.25f, 0.001f, -1.27f, 0.0f,
                                0.9f, 0.3f,   -0.6f,  0.01f};
  const float scale = 1.27f / 127;
  for (Rounding r : {Rounding::kNearest, Rounding::kStochastic}) {
    std::vector<float> words;
    const std::vector<float> back =
        RoundTrip(RowFormat::kInt8, r, 5, v, &words);
    EXPECT_FLOAT_EQ(words[0], scale);
    EXPECT_FLOAT_EQ(back[3], -1.27f);
    EXPECT_EQ(back[4], 0.0f);
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_LE(std::fabs(back[i] - v[i]),
                (r == Rounding::kNearest ? 0.5f : 1.0f) * scale * 1.0001f)
          << i;
    }
    // Padding after the 9th code is zero.
    unsigned char bytes[12];
    std::memcpy(bytes, &words[1], 12);
    EXPECT_EQ(bytes[9] | bytes[10] | bytes[11], 0);
  }
  const std::vector<float> zeros(5, 0.0f);
  EXPECT_EQ(RoundTrip(RowFormat::kInt8, Rounding::kStochastic, 1, zeros),
            zeros);
}

TEST(EmbeddingTest, SameSeedSameWordsOtherSeedOtherRounding) {
  std::vector<float> v(64);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  for (float& x : v) x = dist(rng);
  for (RowFormat f : {RowFormat::kFp16, RowFormat::kInt8}) {
    std::vector<float> a, b, c;
    RoundTrip(f, Rounding::kStochastic, 99, v, &a);
    RoundTrip(f, Rounding::kStochastic, 99, v, &b);
    RoundTrip(f, Rounding::kStochastic, 100, v, &c);
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
    EXPECT_NE(std::memcmp(a.data(), c.data(), a.size() * 4), 0);
  }
}

// The reason for stochastic rounding: updates below half a step vanish
// under nearest rounding and accumulate, in expectation, under stochastic.
TEST(EmbeddingTest, StochasticRoundingKeepsUpdatesSmallerThanAStep) {
  const uint32_t n = 8;
  for (Rounding r : {Rounding::kNearest, Rounding::kStochastic}) {
    std::vector<float> v(n, 0.1f);
    v[0] = 1.0f;  // scale 1/127: a step of ~0.0079
    for (int step = 0; step < 500; ++step) {
      for (uint32_t i = 1; i < n; ++i) v[i] += 0.001f;  // 1/8 of a step
      v = RoundTrip(RowFormat::kInt8, r, 1000 + step, v);
    }
    double mean = 0;
    for (uint32_t i = 1; i < n; ++i) mean += v[i] / (n - 1);
    if (r == Rounding::kNearest) {
      EXPECT_NEAR(mean, 0.1, 0.004);  // stuck where it started
    } else {
      // 0.1 + 500 x 0.001; each rounding adds at most a step's noise
      // (standard deviation of the mean over 7 weights ~0.03).
      EXPECT_NEAR(mean, 0.6, 0.1);
    }
  }
}

}  // namespace
}  // namespace sampan
