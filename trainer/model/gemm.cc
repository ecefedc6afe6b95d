#include "trainer/model/gemm.h"

#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "trainer/model/gemm_internal.h"

namespace sampan {

const char* DenseIsaName(DenseIsa isa) {
  return isa == DenseIsa::kAvx512 ? "avx512" : "avx2";
}

bool CpuHasAvx512() {
  // __builtin_cpu_supports also requires the OS to save the AVX-512 state.
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw");
  }();
  return has;
}

DenseIsa ChooseDenseIsa(const char* env, bool cpu_has_avx512,
                        std::string* warning) {
  warning->clear();
  const DenseIsa widest = cpu_has_avx512 ? DenseIsa::kAvx512 : DenseIsa::kAvx2;
  if (env == nullptr) return widest;
  const std::string value =
      absl::AsciiStrToLower(absl::StripAsciiWhitespace(env));
  if (value.empty()) return widest;
  if (value == "avx2") return DenseIsa::kAvx2;
  if (value == "avx512" && cpu_has_avx512) return DenseIsa::kAvx512;
  *warning = value == "avx512"
                 ? std::string(
                       "SAMPAN_DENSE_ISA=avx512, but this CPU lacks "
                       "AVX-512 (F, DQ, VL, BW): using avx2")
                 : std::string("SAMPAN_DENSE_ISA=") + env +
                       " is not one of avx2, avx512: using avx2";
  return DenseIsa::kAvx2;
}

DenseIsa ActiveDenseIsa() {
  static const DenseIsa isa = [] {
    std::string warning;
    const DenseIsa chosen = ChooseDenseIsa(std::getenv("SAMPAN_DENSE_ISA"),
                                           CpuHasAvx512(), &warning);
    if (!warning.empty()) SAMPAN_LOG(WARNING) << warning;
    SAMPAN_LOG(INFO) << "dense layers: " << DenseIsaName(chosen)
                     << " matrix products";
    return chosen;
  }();
  return isa;
}

void GemmOn(DenseIsa isa, bool transpose_a, bool transpose_b, int m, int n,
            int k, const float* a, const float* b, bool accumulate, float* c) {
  if (isa == DenseIsa::kAvx512) {
    if (!CpuHasAvx512()) {
      SAMPAN_LOG(FATAL) << "GemmOn(avx512) on a CPU without AVX-512";
    }
    gemm_internal::GemmAvx512(transpose_a, transpose_b, m, n, k, a, b,
                              accumulate, c);
  } else {
    gemm_internal::GemmAvx2(transpose_a, transpose_b, m, n, k, a, b, accumulate,
                            c);
  }
}

void Gemm(bool transpose_a, bool transpose_b, int m, int n, int k,
          const float* a, const float* b, bool accumulate, float* c) {
  GemmOn(ActiveDenseIsa(), transpose_a, transpose_b, m, n, k, a, b, accumulate,
         c);
}

}  // namespace sampan
