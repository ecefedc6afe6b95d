// GpuMlp: the MLP of a CTR model (Linear layers with ReLU between them) on a
// CUDA GPU with cuBLAS, in place of the Eigen path of ctr_model.cc.
//
// Promises: the same function as the CPU layers in float32 (results agree to
// rounding unless `allow_tf32`; gpu_mlp_test checks it on the device);
// inputs and outputs in host memory, because embeddings come from the
// pservers and the optimizer updates the weights on the host; activations
// stay on the device from Forward to the Backward of the same batch.
// Available() is UNAVAILABLE, with the reason, in builds without the CUDA
// toolkit and on machines without a GPU (cudaGetDeviceCount error 35).
// Every wait for the device is bounded by `timeout` (DEADLINE_EXCEEDED).
//
// Thread safety: none; one object per thread (it owns a stream, a cuBLAS
// handle and device buffers).
#ifndef SAMPAN_TRAINER_MODEL_GPU_MLP_H_
#define SAMPAN_TRAINER_MODEL_GPU_MLP_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "trainer/model/layers.h"

namespace sampan {

struct GpuMlpOptions {
  // Bounds every wait for the device.
  absl::Duration timeout = absl::Seconds(60);
  // Lets cuBLAS use TF32 tensor cores (about 10 bits of mantissa in the
  // products): several times faster, no longer within float32 rounding.
  bool allow_tf32 = false;
};

class GpuMlp {
 public:
  // OK when a CUDA GPU can be used; UNAVAILABLE with the reason otherwise.
  static absl::Status Available();
  // `layers` as CtrModel builds them (ReLU after every layer but the last),
  // addressing a parameter buffer of `dense_size` floats. Uses device 0.
  static absl::StatusOr<std::unique_ptr<GpuMlp>> Create(
      const std::vector<Linear>& layers, size_t dense_size,
      const GpuMlpOptions& options);
  virtual ~GpuMlp() = default;

  // out (B x 1) = MLP(x), x: B x layers[0].in(); `dense` the host weights.
  virtual absl::Status Forward(const float* dense, const Mat& x, Mat* out) = 0;
  // After Forward of the same batch, for d loss / d out = `dout`: adds each
  // layer's dW and db into `grads` (host, dense_size floats) and overwrites
  // `dx` (B x in) when not null. `ready(k)`, when set, is called as soon as
  // layer k's gradients are in `grads`, the last layer first, so their
  // allreduce can start while the GPU computes the earlier layers.
  virtual absl::Status Backward(const Mat& dout, float* grads, Mat* dx,
                                const std::function<void(int)>& ready) = 0;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_GPU_MLP_H_
