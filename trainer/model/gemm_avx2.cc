// The AVX2 + FMA copy of the dense products (gemm.h): the build's own flags.
#include "Eigen/Core"
#include "trainer/model/gemm_internal.h"

#define SAMPAN_GEMM_NAME GemmAvx2
#include "trainer/model/gemm_kernel.inc"
