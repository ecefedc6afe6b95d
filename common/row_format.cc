#include "common/row_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>

#include "absl/base/casts.h"
#include "common/hash.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace sampan {
namespace {

// Uniform numbers in [0, 1), or 64 random bits, from a seed (SplitMix64's
// sequence).
class Uniform {
 public:
  explicit Uniform(uint64_t seed) : state_(seed) {}
  float Next() { return static_cast<float>(Bits() >> 40) * 0x1.0p-24f; }
  uint64_t Bits() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return Mix64(state_);
  }

 private:
  uint64_t state_;
};

constexpr float kMaxHalf = 65504.0f;
constexpr float kMinNormalHalf = 0x1.0p-14f;
// The same bounds as float32 bit patterns (of magnitudes).
constexpr uint32_t kMinNormalHalfBits = 0x38800000;  // 2^-14
constexpr uint32_t kMaxHalfBits = 0x477fe000;        // 65504

// The magnitude bits of the largest half <= a, for a in [0, kMaxHalf].
uint16_t HalfTowardZero(float a) {
  if (a < kMinNormalHalf) {
    // Subnormal halves are multiples of 2^-24: exact scaling, truncation.
    return static_cast<uint16_t>(a * 0x1.0p24f);
  }
  const uint32_t b = absl::bit_cast<uint32_t>(a);
  const int e = static_cast<int>((b >> 23) & 0xff) - 127;  // -14..15
  return static_cast<uint16_t>(((e + 15) << 10) | ((b >> 13) & 0x3ff));
}

// Rounds x (>= lo, < lo + 1 in units of the code) up to lo + 1 or not.
bool RoundUp(float frac, bool lo_odd, Rounding rounding, float u) {
  if (rounding == Rounding::kStochastic) return u < frac;
  return frac > 0.5f || (frac == 0.5f && lo_odd);
}

// FP16 codes to floats one at a time (HalfToFloat), from words[0]'s first
// half on.
void DecodeHalves(const float* words, uint32_t begin, uint32_t n, float* v) {
  for (uint32_t i = begin; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, reinterpret_cast<const char*>(words) + 2 * i, 2);
    v[i] = HalfToFloat(h);
  }
}

#if defined(__x86_64__)
// The same with F16C's vcvtph2ps, eight at a time: the same floats for
// every code the encoder writes (it writes no signalling NaN, which the
// instruction would quiet). Compiled for F16C whatever the build's
// baseline; called only where the CPU has it.
__attribute__((target("avx,f16c"))) void DecodeHalvesF16c(const float* words,
                                                          uint32_t n,
                                                          float* v) {
  const char* h = reinterpret_cast<const char*>(words);
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i codes =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 2 * i));
    _mm256_storeu_ps(v + i, _mm256_cvtph_ps(codes));
  }
  DecodeHalves(words, i, n, v);
}

// CPUID leaf 1: F16C, AVX and OSXSAVE; XCR0: the OS saves the YMM
// registers. (By hand: not every compiler's __builtin_cpu_supports knows
// "f16c".)
bool CpuHasF16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    constexpr unsigned kOsXsave = 1u << 27, kAvx = 1u << 28, kF16c = 1u << 29;
    if ((ecx & (kOsXsave | kAvx | kF16c)) != (kOsXsave | kAvx | kF16c)) {
      return false;
    }
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6u) == 6u;
  }();
  return has;
}
#endif

}  // namespace

const char* RowFormatName(RowFormat format) {
  switch (format) {
    case RowFormat::kFp32:
      return "FP32";
    case RowFormat::kFp16:
      return "FP16";
    case RowFormat::kInt8:
      return "INT8";
  }
  return "?";
}

std::optional<RowFormat> ParseRowFormat(std::string_view name) {
  for (RowFormat f : {RowFormat::kFp32, RowFormat::kFp16, RowFormat::kInt8}) {
    const std::string_view want = RowFormatName(f);
    if (name.size() == want.size() &&
        std::equal(name.begin(), name.end(), want.begin(), [](char a, char b) {
          return std::toupper(static_cast<unsigned char>(a)) == b;
        })) {
      return f;
    }
  }
  return std::nullopt;
}

uint32_t EmbeddingWords(RowFormat format, uint32_t n) {
  switch (format) {
    case RowFormat::kFp32:
      return n;
    case RowFormat::kFp16:
      return (n + 1) / 2;
    case RowFormat::kInt8:
      return n == 0 ? 0 : 1 + (n + 3) / 4;
  }
  return n;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) {
    const float v = static_cast<float>(m) * 0x1.0p-24f;
    return sign != 0 ? -v : v;
  }
  if (e == 31) return absl::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return absl::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t FloatToHalf(float f, Rounding rounding, float u) {
  const uint16_t sign = (absl::bit_cast<uint32_t>(f) >> 16) & 0x8000;
  const float a = std::fabs(f);
  if (std::isnan(a)) return sign | 0x7e00;
  if (a >= kMaxHalf) return sign | 0x7bff;  // saturates: no infinities
  const uint16_t lo = HalfTowardZero(a);
  const float lo_f = HalfToFloat(lo);
  if (lo_f == a) return sign | lo;
  // Magnitude bits are monotonic: lo + 1 is the next half up (< 0x7bff + 1).
  const float hi_f = HalfToFloat(lo + 1);
  const float frac = (a - lo_f) / (hi_f - lo_f);
  return sign | (lo + (RoundUp(frac, lo & 1, rounding, u) ? 1 : 0));
}

void EncodeEmbedding(RowFormat format, Rounding rounding, uint64_t seed,
                     const float* v, uint32_t n, float* words) {
  if (format == RowFormat::kFp32) {
    std::memcpy(words, v, size_t{n} * 4);
    return;
  }
  const uint32_t nw = EmbeddingWords(format, n);
  std::memset(words, 0, size_t{nw} * 4);
  const bool stochastic = rounding == Rounding::kStochastic;
  Uniform uniform(seed);
  uint64_t bits = 0;  // 16 random bits per weight, four per draw
  auto random16 = [&](uint32_t i) {
    if (i % 4 == 0) bits = uniform.Bits();
    const uint32_t r = bits & 0xffff;
    bits >>= 16;
    return r;
  };
  if (format == RowFormat::kFp16) {
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t r = stochastic ? random16(i) : 0;
      const uint32_t b = absl::bit_cast<uint32_t>(v[i]);
      const uint32_t a = b & 0x7fffffff;
      uint16_t h;
      if (a >= kMinNormalHalfBits && a < kMaxHalfBits) {
        // A normal half: add to the 13 bits the half drops (random ones, or
        // just under half a step plus the kept bit for ties to even) and
        // truncate; a carry moves to the next code, exponent included.
        const uint32_t add =
            stochastic ? (r & 0x1fff) : 0xfff + ((a >> 13) & 1);
        const uint32_t m = ((a + add) >> 13) - (112u << 10);
        h = static_cast<uint16_t>(((b >> 16) & 0x8000) | std::min(m, 0x7bffu));
      } else {  // subnormal, saturated or NaN: the general conversion
        h = FloatToHalf(v[i], rounding, r * 0x1.0p-16f);
      }
      std::memcpy(reinterpret_cast<char*>(words) + 2 * i, &h, 2);
    }
    return;
  }
  // INT8: a float32 scale, then the codes.
  float max_abs = 0;
  for (uint32_t i = 0; i < n; ++i) max_abs = std::max(max_abs, std::fabs(v[i]));
  const float scale = max_abs / 127.0f;
  words[0] = scale;
  if (scale == 0) return;
  const float inv = 127.0f / max_abs;
  unsigned char* q = reinterpret_cast<unsigned char*>(words + 1);
  for (uint32_t i = 0; i < n; ++i) {
    // x + 128 is in [1, 255]: truncation is floor, without a branch.
    // Stochastic: floor(x + u) is floor(x) + 1 with probability frac(x);
    // nearest: floor(x + 0.5), ties up.
    const float x = std::clamp(v[i] * inv, -127.0f, 127.0f) + 128.0f;
    const float u = stochastic ? random16(i) * 0x1.0p-16f : 0.5f;
    const int8_t c = static_cast<int8_t>(static_cast<int>(x + u) - 128);
    std::memcpy(q + i, &c, 1);
  }
}

void DecodeEmbedding(RowFormat format, const float* words, uint32_t n,
                     float* v) {
  switch (format) {
    case RowFormat::kFp32:
      std::memcpy(v, words, size_t{n} * 4);
      return;
    case RowFormat::kFp16:
#if defined(__x86_64__)
      if (CpuHasF16c()) {
        DecodeHalvesF16c(words, n, v);
        return;
      }
#endif
      DecodeHalves(words, 0, n, v);
      return;
    case RowFormat::kInt8: {
      const float scale = words[0];
      const unsigned char* q =
          reinterpret_cast<const unsigned char*>(words + 1);
      for (uint32_t i = 0; i < n; ++i) {
        int8_t c;
        std::memcpy(&c, q + i, 1);
        v[i] = c * scale;
      }
      return;
    }
  }
}

}  // namespace sampan
