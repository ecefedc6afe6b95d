#include "trainer/model/gpu_kernels.h"

namespace sampan {
namespace gpu {
namespace {

constexpr int kThreads = 256;

int Blocks(long n) {
  // A grid-stride loop covers the rest; 65535 blocks keep every GPU busy.
  const long b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

__global__ void BiasActivationKernel(float* y, const float* b, long n, int cols,
                                     bool relu) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n;
       i += long(gridDim.x) * blockDim.x) {
    const float v = y[i] + b[i % cols];
    y[i] = relu ? fmaxf(v, 0.0f) : v;
  }
}

__global__ void ReluBackwardKernel(const float* y, float* dy, long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n;
       i += long(gridDim.x) * blockDim.x) {
    if (!(y[i] > 0.0f)) dy[i] = 0.0f;
  }
}

__global__ void FillKernel(float* p, float value, long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n;
       i += long(gridDim.x) * blockDim.x) {
    p[i] = value;
  }
}

}  // namespace

cudaError_t BiasActivation(float* y, const float* b, int rows, int cols,
                           bool relu, cudaStream_t stream) {
  const long n = long(rows) * cols;
  BiasActivationKernel<<<Blocks(n), kThreads, 0, stream>>>(y, b, n, cols, relu);
  return cudaGetLastError();
}

cudaError_t ReluBackward(const float* y, float* dy, long n,
                         cudaStream_t stream) {
  ReluBackwardKernel<<<Blocks(n), kThreads, 0, stream>>>(y, dy, n);
  return cudaGetLastError();
}

cudaError_t Fill(float* p, float value, long n, cudaStream_t stream) {
  FillKernel<<<Blocks(n), kThreads, 0, stream>>>(p, value, n);
  return cudaGetLastError();
}

}  // namespace gpu
}  // namespace sampan
