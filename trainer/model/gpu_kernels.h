// Element-wise CUDA kernels of the GPU MLP (gpu_kernels.cu, built by nvcc):
// what cuBLAS's products leave to do. All launch on `stream` and return the
// launch error; matrices are row-major, `rows` examples by `cols` units.
#ifndef SAMPAN_TRAINER_MODEL_GPU_KERNELS_H_
#define SAMPAN_TRAINER_MODEL_GPU_KERNELS_H_

#include <cuda_runtime_api.h>

namespace sampan {
namespace gpu {

// y[i][j] += b[j], then y = max(y, 0) when `relu`.
cudaError_t BiasActivation(float* y, const float* b, int rows, int cols,
                           bool relu, cudaStream_t stream);
// dy[i] = y[i] > 0 ? dy[i] : 0 for i < n, where y is ReLU's output.
cudaError_t ReluBackward(const float* y, float* dy, long n,
                         cudaStream_t stream);
// p[i] = value for i < n.
cudaError_t Fill(float* p, float value, long n, cudaStream_t stream);

}  // namespace gpu
}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_GPU_KERNELS_H_
