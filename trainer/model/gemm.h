// Dense matrix products for the CTR model's layers, on the widest vector unit
// the CPU has.
//
// The binary is built for x86-64-v3 (AVX2 + FMA). Where the CPU also has
// AVX-512 (F, DQ, VL, BW), the products run on a second copy of the same
// Eigen kernel compiled for it (gemm_avx512.cc), chosen once, at the first
// call; on the EPYC machines this project runs on that is 1.7-1.9x the
// FLOP/s of the AVX2 copy (bench/RESULTS.md). SAMPAN_DENSE_ISA=avx2 in the
// environment keeps the AVX2 copy (for A/B runs, or for the same rounding as
// a machine without AVX-512 with the same cache sizes: Eigen blocks its sums
// by the L1/L2 sizes it reads from the CPU); results of the two copies
// differ by float rounding only (the sums run in another order).
//
// Thread safety: every function may be called from any thread at once.
#ifndef SAMPAN_TRAINER_MODEL_GEMM_H_
#define SAMPAN_TRAINER_MODEL_GEMM_H_

#include <string>

namespace sampan {

enum class DenseIsa { kAvx2, kAvx512 };

// "avx2" or "avx512".
const char* DenseIsaName(DenseIsa isa);

// Which copy runs Gemm in this process (fixed at first use).
DenseIsa ActiveDenseIsa();

// The copy to use, given the value of SAMPAN_DENSE_ISA (null when unset;
// case and surrounding spaces ignored) and whether the CPU has AVX-512: the
// widest the CPU has, unless the variable names a narrower one. A value
// naming a copy the CPU lacks, or no copy at all, gets avx2 (whoever set the
// variable wanted less than the widest) and sets *warning to a message
// naming the variable; otherwise *warning is cleared.
DenseIsa ChooseDenseIsa(const char* env, bool cpu_has_avx512,
                        std::string* warning);

// Whether this CPU can run the AVX-512 copy.
bool CpuHasAvx512();

// C = op(A) op(B), or C += op(A) op(B) when `accumulate`, for row-major
// float matrices: op(A) is m x k, op(B) is k x n, C is m x n. A is stored
// m x k, or k x m when `transpose_a` (and op(A) is its transpose); likewise B.
// C must not overlap A or B. Any of m, n, k may be 0.
void Gemm(bool transpose_a, bool transpose_b, int m, int n, int k,
          const float* a, const float* b, bool accumulate, float* c);

// The same product on a named copy (tests and benchmarks). Asking for
// AVX-512 on a CPU without it ends the process with a message.
void GemmOn(DenseIsa isa, bool transpose_a, bool transpose_b, int m, int n,
            int k, const float* a, const float* b, bool accumulate, float* c);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_GEMM_H_
