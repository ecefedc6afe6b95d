// Dense layers for CTR models, batched over examples with Eigen; their
// matrix products run through gemm.h (AVX-512 where the CPU has it).
//
// Promises: every layer works on a whole batch at once (one row per example)
// with matrix products, never a loop over examples; every Backward is the
// exact gradient of its Forward (checked numerically in layers_test.cc).
// Layers hold no parameters: they address blocks of one flat float buffer by
// offset (see ParamLayout), so a model's dense weights are a single array
// that optimizers, snapshots and allreduce treat as plain memory.
//
// Backward *accumulates* into parameter gradients (callers zero them once per
// step) and *overwrites* input gradients unless documented otherwise.
// Thread safety: layers are immutable after construction; concurrent calls
// with distinct activation buffers are safe.
#ifndef SAMPAN_TRAINER_MODEL_LAYERS_H_
#define SAMPAN_TRAINER_MODEL_LAYERS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "Eigen/Core"

namespace sampan {

// Row-major: row i is example i.
using Mat =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatMap = Eigen::Map<Mat>;
using ConstMatMap = Eigen::Map<const Mat>;

// Hands out consecutive blocks of a flat parameter buffer.
class ParamLayout {
 public:
  size_t Add(size_t count) {
    const size_t offset = size_;
    size_ += count;
    return offset;
  }
  size_t size() const { return size_; }

 private:
  size_t size_ = 0;
};

// y = x W + b, W: in x out.
class Linear {
 public:
  Linear(int in, int out, ParamLayout* layout);
  int in() const { return in_; }
  int out() const { return out_; }
  // Where W (in x out, row-major) and b start in the parameter buffer.
  size_t w_offset() const { return w_; }
  size_t b_offset() const { return b_; }
  // Glorot-uniform W, zero b.
  void Init(std::mt19937* rng, float* params) const;
  void Forward(const float* params, const Mat& x, Mat* y) const;
  // dW += x^T dy, db += colsum(dy); dx = dy W^T when dx is not null.
  void Backward(const float* params, const Mat& x, const Mat& dy, float* grads,
                Mat* dx) const;

 private:
  int in_, out_;
  size_t w_, b_;
};

// In place: x = max(x, 0).
void ReluForward(Mat* x);
// dy *= (y > 0), where y is Relu's output.
void ReluBackward(const Mat& y, Mat* dy);

// Factorization-machine pairwise term over `fields` embeddings of width
// `dim` laid side by side in each row of e (B x fields*dim):
//   out = 1/2 sum_d [(sum_f e_fd)^2 - sum_f e_fd^2]        (B x 1)
class FmInteraction {
 public:
  FmInteraction(int fields, int dim) : fields_(fields), dim_(dim) {}
  // `sum` keeps sum_f e_f (B x dim) for Backward.
  void Forward(const Mat& e, Mat* sum, Mat* out) const;
  // de += dout * (sum - e_f) for every field f (accumulates).
  void Backward(const Mat& e, const Mat& sum, const Mat& dout, Mat* de) const;

 private:
  int fields_, dim_;
};

// DCN-v2 cross layer: y = x0 .* (x W + b) + x, W: dim x dim.
class CrossLayer {
 public:
  CrossLayer(int dim, ParamLayout* layout);
  // W then b, adjacent in the parameter buffer.
  size_t w_offset() const { return w_; }
  size_t param_count() const { return size_t(dim_ + 1) * dim_; }
  // Near-zero W (so the stack starts as the identity), zero b.
  void Init(std::mt19937* rng, float* params) const;
  // `u` keeps x W + b for Backward.
  void Forward(const float* params, const Mat& x0, const Mat& x, Mat* u,
               Mat* y) const;
  // dx0 += dy .* u (accumulates); dx = (dy .* x0) W^T + dy (overwrites).
  void Backward(const float* params, const Mat& x0, const Mat& x, const Mat& u,
                const Mat& dy, float* grads, Mat* dx0, Mat* dx) const;

 private:
  int dim_;
  size_t w_, b_;
};

// One example's sigmoid and log loss: the loss of `logit` (clamped to
// [-30, 30]) for label y in {0, 1}; writes the probability to *p.
inline double SigmoidLoss(float logit, float y, float* p) {
  const float z = std::clamp(logit, -30.0f, 30.0f);
  *p = 1.0f / (1.0f + std::exp(-z));
  // log(1 + e^-z) for y = 1, log(1 + e^z) for y = 0, computed stably.
  const float s = y > 0.5f ? -z : z;
  return s > 0 ? s + std::log1p(std::exp(-s)) : std::log1p(std::exp(s));
}

// Sigmoid and mean-free log loss: writes probabilities and d loss/d logit
// (p - y) and returns the summed loss. Logits are clamped to [-30, 30].
double SigmoidCrossEntropy(const Mat& logits, const float* labels, float* probs,
                           Mat* dlogits);

// Sum pooling of multi-valued slots into per-field embeddings.
// Example i owns signs [offsets[i], offsets[i+1]); sign j has slot slots[j]
// and its pulled row at rows + row_of_sign[j] * row_dim, whose floats
// [1, 1 + dim) are the embedding. Slot s in [1, fields] pools into field
// s - 1; other slots are skipped. Writes e (B x fields*dim).
struct PoolingInput {
  const uint32_t* offsets;
  const uint16_t* slots;
  const uint32_t* row_of_sign;
  size_t examples;
};
void SumPoolForward(const PoolingInput& in, const float* rows, int row_dim,
                    int fields, int dim, Mat* e);
// Scatters de back: grads[row][1 + d] += de[i][field * dim + d].
void SumPoolBackward(const PoolingInput& in, const Mat& de, int row_dim,
                     int fields, int dim, float* grads);

// Per-field widths: field f pools the first dims[f] floats of its rows' v
// into columns [offsets[f], offsets[f] + dims[f]) of e, whose width is
// offsets.back() + dims.back(). dims[f] <= row_dim - 1.
struct FieldWidths {
  std::vector<int> dims, offsets;
  int width = 0;
};
FieldWidths UniformWidths(int fields, int dim);
void SumPoolForward(const PoolingInput& in, const float* rows, int row_dim,
                    const FieldWidths& w, Mat* e);
void SumPoolBackward(const PoolingInput& in, const Mat& de, int row_dim,
                     const FieldWidths& w, float* grads);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_LAYERS_H_
