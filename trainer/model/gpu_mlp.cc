// The cuBLAS MLP. Row-major host matrices are column-major transposes to
// cuBLAS, so y = x W (B x out) is computed as y^T = W^T x^T, and likewise
// for the backward products; ReLU and the bias are small kernels
// (gpu_kernels.cu), the bias gradient a product with a vector of ones.
//
// cuBLAS is loaded with dlopen on first use, not linked: every process of
// the system links this library, and only GPU trainers need cuBLAS's
// ~600 MB. It also has to stay out of the other processes: with
// libcublasLt linked in (or LD_PRELOADed), civetweb (the metrics server)
// fails to start ("null context when constructing CivetServer"; CUDA 13.0,
// Debian's civetweb 1.15; cause not established). Loaded later with dlopen,
// as here, it does not disturb a server started before it or after it.
#include "trainer/model/gpu_mlp.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <string>
#include <thread>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "trainer/model/gpu_kernels.h"

namespace sampan {
namespace {

absl::Status CudaStatus(const char* what, cudaError_t e) {
  if (e == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("gpu dense path: ", what, ": ", cudaGetErrorString(e)));
}

// The cuBLAS entry points used here, resolved from the shared library.
struct Blas {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasSgemm_v2) sgemm;
  decltype(&cublasSgemv_v2) sgemv;
  decltype(&cublasGetStatusString) status_string;
};

// Loads cuBLAS once per process; the handle is never closed.
absl::StatusOr<const Blas*> LoadBlas() {
  static const absl::StatusOr<const Blas*>* loaded = [] {
    const std::string name = absl::StrCat("libcublas.so.", CUBLAS_VER_MAJOR);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      return new absl::StatusOr<const Blas*>(absl::UnavailableError(
          absl::StrCat("gpu dense path: cannot load ", name, ": ", dlerror())));
    }
    auto* b = new Blas;
    bool ok = true;
    auto get = [&](auto* fn, const char* symbol) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(
          dlsym(lib, symbol));
      ok = ok && *fn != nullptr;
    };
    get(&b->create, "cublasCreate_v2");
    get(&b->destroy, "cublasDestroy_v2");
    get(&b->set_stream, "cublasSetStream_v2");
    get(&b->set_math_mode, "cublasSetMathMode");
    get(&b->sgemm, "cublasSgemm_v2");
    get(&b->sgemv, "cublasSgemv_v2");
    get(&b->status_string, "cublasGetStatusString");
    if (!ok) {
      return new absl::StatusOr<const Blas*>(absl::UnavailableError(
          absl::StrCat("gpu dense path: ", name, " lacks a cuBLAS symbol")));
    }
    return new absl::StatusOr<const Blas*>(b);
  }();
  return *loaded;
}

absl::Status BlasStatus(const char* what, cublasStatus_t s) {
  if (s == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  // Only reached with cuBLAS loaded.
  return absl::InternalError(absl::StrCat("gpu dense path: ", what, ": ",
                                          (*LoadBlas())->status_string(s)));
}

#define RETURN_IF_ERROR(expr) \
  do {                        \
    absl::Status _s = (expr); \
    if (!_s.ok()) return _s;  \
  } while (0)

// A device buffer of floats that only grows.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_ != nullptr) cudaFree(p_);
  }
  absl::Status Reserve(size_t n) {
    if (n <= n_) return absl::OkStatus();
    if (p_ != nullptr) cudaFree(p_);
    p_ = nullptr;
    n_ = 0;
    RETURN_IF_ERROR(CudaStatus(
        "cudaMalloc", cudaMalloc(reinterpret_cast<void**>(&p_), n * 4)));
    n_ = n;
    return absl::OkStatus();
  }
  float* get() const { return p_; }

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

class CublasMlp : public GpuMlp {
 public:
  CublasMlp(const Blas* blas, const std::vector<Linear>& layers,
            size_t dense_size, const GpuMlpOptions& options)
      : blas_(blas),
        layers_(layers),
        dense_size_(dense_size),
        options_(options),
        h_(layers.size() + 1),
        events_(layers.size(), nullptr) {}

  ~CublasMlp() override {
    for (cudaEvent_t e : events_) {
      if (e != nullptr) cudaEventDestroy(e);
    }
    if (staging_ != nullptr) cudaFreeHost(staging_);
    if (handle_ != nullptr) blas_->destroy(handle_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  absl::Status Init() {
    RETURN_IF_ERROR(CudaStatus("cudaSetDevice", cudaSetDevice(0)));
    RETURN_IF_ERROR(
        CudaStatus("cudaStreamCreate",
                   cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)));
    RETURN_IF_ERROR(BlasStatus("cublasCreate", blas_->create(&handle_)));
    RETURN_IF_ERROR(
        BlasStatus("cublasSetStream", blas_->set_stream(handle_, stream_)));
    RETURN_IF_ERROR(BlasStatus(
        "cublasSetMathMode",
        blas_->set_math_mode(handle_, options_.allow_tf32
                                          ? CUBLAS_TF32_TENSOR_OP_MATH
                                          : CUBLAS_PEDANTIC_MATH)));
    for (cudaEvent_t& e : events_) {
      RETURN_IF_ERROR(
          CudaStatus("cudaEventCreate",
                     cudaEventCreateWithFlags(&e, cudaEventDisableTiming)));
    }
    RETURN_IF_ERROR(weights_.Reserve(dense_size_));
    RETURN_IF_ERROR(grads_.Reserve(dense_size_));
    // Pinned, so the gradients' copies back run asynchronously.
    return CudaStatus(
        "cudaMallocHost",
        cudaMallocHost(reinterpret_cast<void**>(&staging_), dense_size_ * 4));
  }

  absl::Status Forward(const float* dense, const Mat& x, Mat* out) override {
    const int b = static_cast<int>(x.rows());
    if (x.cols() != layers_[0].in()) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpu dense path: input has ", x.cols(),
                       " columns, the MLP expects ", layers_[0].in()));
    }
    RETURN_IF_ERROR(Reserve(b));
    RETURN_IF_ERROR(
        Copy(weights_.get(), dense, dense_size_, cudaMemcpyHostToDevice));
    RETURN_IF_ERROR(
        Copy(h_[0].get(), x.data(), x.size(), cudaMemcpyHostToDevice));
    const float one = 1, zero = 0;
    for (size_t k = 0; k < layers_.size(); ++k) {
      const Linear& l = layers_[k];
      RETURN_IF_ERROR(BlasStatus(
          "cublasSgemm (forward)",
          blas_->sgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, l.out(), b, l.in(),
                       &one, weights_.get() + l.w_offset(), l.out(),
                       h_[k].get(), l.in(), &zero, h_[k + 1].get(), l.out())));
      RETURN_IF_ERROR(CudaStatus(
          "bias kernel",
          gpu::BiasActivation(h_[k + 1].get(), weights_.get() + l.b_offset(), b,
                              l.out(), k + 1 < layers_.size(), stream_)));
    }
    out->resize(b, layers_.back().out());
    RETURN_IF_ERROR(Copy(out->data(), h_.back().get(), out->size(),
                         cudaMemcpyDeviceToHost));
    batch_ = b;
    return Sync();
  }

  absl::Status Backward(const Mat& dout, float* grads, Mat* dx,
                        const std::function<void(int)>& ready) override {
    const int b = batch_;
    if (dout.rows() != b || dout.cols() != layers_.back().out()) {
      return absl::InvalidArgumentError(
          "gpu dense path: Backward's dout does not match the last Forward");
    }
    RETURN_IF_ERROR(
        Copy(dh_->get(), dout.data(), dout.size(), cudaMemcpyHostToDevice));
    for (size_t k = layers_.size(); k-- > 0;) {
      RETURN_IF_ERROR(LayerBackward(k, b, k > 0 || dx != nullptr));
    }
    // The host adds each layer's gradients as they land, last layer first,
    // while the device works on the layers before it.
    const absl::Time deadline = absl::Now() + options_.timeout;
    for (size_t k = layers_.size(); k-- > 0;) {
      RETURN_IF_ERROR(WaitFor(events_[k], deadline));
      const Linear& l = layers_[k];
      AddInto(grads, l.w_offset(), size_t(l.in()) * l.out());
      AddInto(grads, l.b_offset(), l.out());
      if (ready) ready(static_cast<int>(k));
    }
    if (dx != nullptr) {
      dx->resize(b, layers_[0].in());
      RETURN_IF_ERROR(
          Copy(dx->data(), dh_->get(), dx->size(), cudaMemcpyDeviceToHost));
    }
    return Sync();
  }

 private:
  // dh holds d loss / d (layer k's output); leaves d loss / d (its input).
  absl::Status LayerBackward(size_t k, int b, bool want_dx) {
    const Linear& l = layers_[k];
    const float one = 1, zero = 0;
    if (k + 1 < layers_.size()) {
      RETURN_IF_ERROR(CudaStatus(
          "relu kernel", gpu::ReluBackward(h_[k + 1].get(), dh_->get(),
                                           long(b) * l.out(), stream_)));
    }
    float* dw = grads_.get() + l.w_offset();
    float* db = grads_.get() + l.b_offset();
    RETURN_IF_ERROR(
        BlasStatus("cublasSgemm (dW)",
                   blas_->sgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_T, l.out(),
                                l.in(), b, &one, dh_->get(), l.out(),
                                h_[k].get(), l.in(), &zero, dw, l.out())));
    RETURN_IF_ERROR(BlasStatus(
        "cublasSgemv (db)",
        blas_->sgemv(handle_, CUBLAS_OP_N, l.out(), b, &one, dh_->get(),
                     l.out(), ones_.get(), 1, &zero, db, 1)));
    RETURN_IF_ERROR(
        CopyAsync(staging_ + l.w_offset(), dw, size_t(l.in()) * l.out()));
    RETURN_IF_ERROR(CopyAsync(staging_ + l.b_offset(), db, l.out()));
    RETURN_IF_ERROR(
        CudaStatus("cudaEventRecord", cudaEventRecord(events_[k], stream_)));
    if (!want_dx) return absl::OkStatus();
    RETURN_IF_ERROR(BlasStatus(
        "cublasSgemm (dx)",
        blas_->sgemm(handle_, CUBLAS_OP_T, CUBLAS_OP_N, l.in(), b, l.out(),
                     &one, weights_.get() + l.w_offset(), l.out(), dh_->get(),
                     l.out(), &zero, dprev_->get(), l.in())));
    std::swap(dh_, dprev_);
    return absl::OkStatus();
  }

  absl::Status Reserve(int b) {
    int widest = layers_[0].in();
    RETURN_IF_ERROR(h_[0].Reserve(size_t(b) * layers_[0].in()));
    for (size_t k = 0; k < layers_.size(); ++k) {
      RETURN_IF_ERROR(h_[k + 1].Reserve(size_t(b) * layers_[k].out()));
      widest = std::max(widest, layers_[k].out());
    }
    RETURN_IF_ERROR(dh_->Reserve(size_t(b) * widest));
    RETURN_IF_ERROR(dprev_->Reserve(size_t(b) * widest));
    if (b > ones_size_) {
      RETURN_IF_ERROR(ones_.Reserve(b));
      RETURN_IF_ERROR(
          CudaStatus("fill kernel", gpu::Fill(ones_.get(), 1.0f, b, stream_)));
      ones_size_ = b;
    }
    return absl::OkStatus();
  }

  void AddInto(float* grads, size_t offset, size_t n) const {
    const float* s = staging_ + offset;
    float* g = grads + offset;
    for (size_t i = 0; i < n; ++i) g[i] += s[i];
  }

  absl::Status Copy(void* dst, const void* src, size_t floats,
                    cudaMemcpyKind kind) {
    return CudaStatus("cudaMemcpyAsync",
                      cudaMemcpyAsync(dst, src, floats * 4, kind, stream_));
  }
  absl::Status CopyAsync(float* host, const float* device, size_t floats) {
    return Copy(host, device, floats, cudaMemcpyDeviceToHost);
  }

  // cudaEventSynchronize would wait forever on a hung device: poll instead.
  absl::Status WaitFor(cudaEvent_t event, absl::Time deadline) {
    return Poll([event] { return cudaEventQuery(event); }, deadline);
  }

  absl::Status Sync() {
    return Poll([this] { return cudaStreamQuery(stream_); },
                absl::Now() + options_.timeout);
  }

  // Calls `query` until it stops answering cudaErrorNotReady or `deadline`.
  template <typename Query>
  static absl::Status Poll(Query query, absl::Time deadline) {
    while (true) {
      const cudaError_t e = query();
      if (e == cudaSuccess) return absl::OkStatus();
      if (e != cudaErrorNotReady) return CudaStatus("waiting for the GPU", e);
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            "gpu dense path: the device did not finish within the timeout");
      }
      std::this_thread::yield();
    }
  }

  const Blas* const blas_;
  const std::vector<Linear> layers_;
  const size_t dense_size_;
  const GpuMlpOptions options_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  DeviceBuffer weights_, grads_, ones_, delta_a_, delta_b_;
  // d loss / d (current layer's output), and the one being written.
  DeviceBuffer* dh_ = &delta_a_;
  DeviceBuffer* dprev_ = &delta_b_;
  std::vector<DeviceBuffer> h_;  // h_[k]: layer k's input; h_.back(): output
  std::vector<cudaEvent_t> events_;  // layer k's gradients are on the host
  float* staging_ = nullptr;         // pinned; the gradients' copy back
  int ones_size_ = 0;
  int batch_ = 0;  // rows of the last Forward
};

}  // namespace

absl::Status GpuMlp::Available() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) {
    return absl::UnavailableError(absl::StrCat(
        "gpu dense path: no usable GPU (cudaGetDeviceCount: ",
        cudaGetErrorString(e), ", error ", static_cast<int>(e), ")"));
  }
  if (devices == 0) {
    return absl::UnavailableError("gpu dense path: no GPU device");
  }
  return LoadBlas().status();
}

absl::StatusOr<std::unique_ptr<GpuMlp>> GpuMlp::Create(
    const std::vector<Linear>& layers, size_t dense_size,
    const GpuMlpOptions& options) {
  RETURN_IF_ERROR(Available());
  if (layers.empty()) {
    return absl::InvalidArgumentError("gpu dense path: the MLP has no layers");
  }
  auto mlp =
      std::make_unique<CublasMlp>(*LoadBlas(), layers, dense_size, options);
  RETURN_IF_ERROR(mlp->Init());
  return std::unique_ptr<GpuMlp>(std::move(mlp));
}

}  // namespace sampan
