// The per-ISA copies behind gemm.h's Gemm. Internal to trainer/model.
#ifndef SAMPAN_TRAINER_MODEL_GEMM_INTERNAL_H_
#define SAMPAN_TRAINER_MODEL_GEMM_INTERNAL_H_

namespace sampan {
namespace gemm_internal {

// Gemm's contract (gemm.h). GemmAvx512 runs AVX-512 instructions: call it
// only where CpuHasAvx512().
void GemmAvx2(bool transpose_a, bool transpose_b, int m, int n, int k,
              const float* a, const float* b, bool accumulate, float* c);
void GemmAvx512(bool transpose_a, bool transpose_b, int m, int n, int k,
                const float* a, const float* b, bool accumulate, float* c);

}  // namespace gemm_internal
}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_GEMM_INTERNAL_H_
