// The DeepFM dense tower (39 x 8 -> 400 -> 400 -> 400 -> 1), one forward and
// backward per step, on the CPU (Eigen, as ctr_model.cc runs it) and on the
// GPU (GpuMlp: float32 and TF32, host transfers included, as the trainer
// uses it), with cuBLAS SGEMM's FLOP/s on the largest layer as the peer.
//
//   gpu_mlp_bench [seconds per measurement, default 2]
//
// Prints one line per batch size and device; without a GPU, says so and
// measures the CPU only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "trainer/model/gpu_mlp.h"
#include "trainer/model/layers.h"

#ifdef SAMPAN_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#endif

namespace sampan {
namespace {

using Clock = std::chrono::steady_clock;

// Median seconds of `step` over repetitions filling about `budget` seconds.
double MedianSeconds(const std::function<void()>& step, double budget) {
  step();  // warm-up: buffers, handles, JIT
  std::vector<double> t;
  const auto end = Clock::now() + std::chrono::duration<double>(budget);
  while (t.size() < 3 || (Clock::now() < end && t.size() < 1000)) {
    const auto start = Clock::now();
    step();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Tower {
  ParamLayout layout;
  std::vector<Linear> layers;
  std::vector<float> dense, grads;
  double macs = 0;  // per example, forward
  Tower() {
    int in = 39 * 8;
    for (int out : {400, 400, 400, 1}) {
      layers.emplace_back(in, out, &layout);
      macs += double(in) * out;
      in = out;
    }
    std::mt19937 rng(1);
    dense.resize(layout.size());
    grads.assign(layout.size(), 0.0f);
    for (const Linear& l : layers) l.Init(&rng, dense.data());
  }
};

void CpuStep(Tower* t, const Mat& x, const Mat& dout, std::vector<Mat>* h) {
  const size_t n = t->layers.size();
  h->resize(n + 1);
  (*h)[0] = x;
  for (size_t k = 0; k < n; ++k) {
    t->layers[k].Forward(t->dense.data(), (*h)[k], &(*h)[k + 1]);
    if (k + 1 < n) ReluForward(&(*h)[k + 1]);
  }
  Mat dh = dout, dprev;
  for (size_t k = n; k-- > 0;) {
    if (k + 1 < n) ReluBackward((*h)[k + 1], &dh);
    t->layers[k].Backward(t->dense.data(), (*h)[k], dh, t->grads.data(),
                          &dprev);
    dh.swap(dprev);
  }
}

void Report(const char* what, int batch, double seconds, double macs) {
  const double flops = 6 * macs * batch;  // forward 1x, backward 2x MACs
  std::printf(
      "%-22s batch %6d: %9.3f ms/step %12.0f examples/s %8.1f "
      "GFLOP/s\n",
      what, batch, seconds * 1e3, batch / seconds, flops / seconds / 1e9);
}

#ifdef SAMPAN_HAVE_CUDA
// cuBLAS SGEMM (m x k) * (k x n), device-resident, timed with events.
void SgemmPeer(int m, int n, int k, bool tf32) {
  float *a, *b, *c;
  cudaMalloc(reinterpret_cast<void**>(&a), size_t(m) * k * 4);
  cudaMalloc(reinterpret_cast<void**>(&b), size_t(k) * n * 4);
  cudaMalloc(reinterpret_cast<void**>(&c), size_t(m) * n * 4);
  std::vector<float> init(std::max(size_t(m) * k, size_t(k) * n));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& v : init) v = u(rng);
  cudaMemcpy(a, init.data(), size_t(m) * k * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(b, init.data(), size_t(k) * n * 4, cudaMemcpyHostToDevice);
  cublasHandle_t h;
  cublasCreate(&h);
  cublasSetMathMode(h,
                    tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH);
  const float one = 1, zero = 0;
  auto gemm = [&] {
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, b, k, &zero,
                c, m);
  };
  for (int i = 0; i < 10; ++i) gemm();
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const int reps = 200;
  cudaEventRecord(e0);
  for (int i = 0; i < reps; ++i) gemm();
  cudaEventRecord(e1);
  cudaEventSynchronize(e1);
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  const cudaError_t err = cudaGetLastError();
  std::printf("cuBLAS SGEMM%s %dx%dx%d: %.1f GFLOP/s (%s)\n",
              tf32 ? " TF32" : " FP32", m, n, k,
              2.0 * m * n * k * reps / (ms / 1e3) / 1e9,
              cudaGetErrorString(err));
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}
#endif

int Main(int argc, char** argv) {
  const double budget = argc > 1 ? std::atof(argv[1]) : 2.0;
  Tower tower;
  const absl::Status gpu = GpuMlp::Available();
  if (!gpu.ok()) std::printf("GPU: %s (CPU only)\n", gpu.ToString().c_str());
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int batch : {1024, 4096, 16384}) {
    Mat x(batch, 312), dout(batch, 1);
    for (int i = 0; i < x.size(); ++i) x.data()[i] = u(rng);
    for (int i = 0; i < dout.size(); ++i) dout.data()[i] = u(rng) / batch;
    std::vector<Mat> h;
    Report("cpu (eigen, 1 thread)", batch,
           MedianSeconds([&] { CpuStep(&tower, x, dout, &h); }, budget),
           tower.macs);
    if (!gpu.ok()) continue;
    for (bool tf32 : {false, true}) {
      GpuMlpOptions o;
      o.allow_tf32 = tf32;
      auto mlp = GpuMlp::Create(tower.layers, tower.layout.size(), o);
      if (!mlp.ok()) {
        std::printf("GpuMlp::Create: %s\n", mlp.status().ToString().c_str());
        return 1;
      }
      Mat out, dx;
      absl::Status status;
      const double s = MedianSeconds(
          [&] {
            absl::Status f = (*mlp)->Forward(tower.dense.data(), x, &out);
            absl::Status b =
                (*mlp)->Backward(dout, tower.grads.data(), &dx, nullptr);
            if (status.ok()) status = f.ok() ? b : f;
          },
          budget);
      if (!status.ok()) {
        std::printf("gpu step: %s\n", status.ToString().c_str());
        return 1;
      }
      Report(tf32 ? "gpu (cublas tf32)" : "gpu (cublas fp32)", batch, s,
             tower.macs);
    }
  }
#ifdef SAMPAN_HAVE_CUDA
  if (gpu.ok()) {
    SgemmPeer(400, 16384, 400, false);
    SgemmPeer(400, 16384, 400, true);
    SgemmPeer(8192, 8192, 8192, false);
  }
#endif
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) { return sampan::Main(argc, argv); }
