#include "trainer/model/layers.h"

#include <algorithm>
#include <cmath>

#include "trainer/model/gemm.h"

namespace sampan {
namespace {

void FillUniform(std::mt19937* rng, float limit, float* p, size_t n) {
  std::uniform_real_distribution<float> u(-limit, limit);
  for (size_t i = 0; i < n; ++i) p[i] = u(*rng);
}

}  // namespace

Linear::Linear(int in, int out, ParamLayout* layout) : in_(in), out_(out) {
  w_ = layout->Add(size_t(in) * out);
  b_ = layout->Add(out);
}

void Linear::Init(std::mt19937* rng, float* params) const {
  FillUniform(rng, std::sqrt(6.0f / (in_ + out_)), params + w_,
              size_t(in_) * out_);
  std::fill(params + b_, params + b_ + out_, 0.0f);
}

void Linear::Forward(const float* params, const Mat& x, Mat* y) const {
  Eigen::Map<const Eigen::RowVectorXf> b(params + b_, out_);
  eigen_assert(x.cols() == in_);
  y->resize(x.rows(), out_);
  Gemm(false, false, int(x.rows()), out_, in_, x.data(), params + w_, false,
       y->data());
  y->rowwise() += b;
}

void Linear::Backward(const float* params, const Mat& x, const Mat& dy,
                      float* grads, Mat* dx) const {
  eigen_assert(x.cols() == in_ && dy.cols() == out_ && dy.rows() == x.rows());
  Eigen::Map<Eigen::RowVectorXf> db(grads + b_, out_);
  Gemm(true, false, in_, out_, int(x.rows()), x.data(), dy.data(), true,
       grads + w_);
  db += dy.colwise().sum();
  if (dx != nullptr) {
    dx->resize(dy.rows(), in_);
    Gemm(false, true, int(dy.rows()), in_, out_, dy.data(), params + w_, false,
         dx->data());
  }
}

void ReluForward(Mat* x) { *x = x->cwiseMax(0.0f); }

void ReluBackward(const Mat& y, Mat* dy) {
  *dy = (y.array() > 0.0f).select(dy->array(), 0.0f);
}

void FmInteraction::Forward(const Mat& e, Mat* sum, Mat* out) const {
  const Eigen::Index b = e.rows();
  sum->setZero(b, dim_);
  for (int f = 0; f < fields_; ++f) *sum += e.middleCols(f * dim_, dim_);
  out->resize(b, 1);
  out->col(0) =
      0.5f * (sum->rowwise().squaredNorm() - e.rowwise().squaredNorm());
}

void FmInteraction::Backward(const Mat& e, const Mat& sum, const Mat& dout,
                             Mat* de) const {
  // d out / d e_f = sum - e_f, scaled per example by dout: one pass over
  // each row, no B x dim temporary.
  for (Eigen::Index i = 0; i < e.rows(); ++i) {
    const float g = dout(i, 0);
    const float* s = &sum(i, 0);
    const float* in = &e(i, 0);
    float* out = &(*de)(i, 0);
    for (int f = 0; f < fields_; ++f) {
      for (int d = 0; d < dim_; ++d) {
        out[f * dim_ + d] += g * (s[d] - in[f * dim_ + d]);
      }
    }
  }
}

CrossLayer::CrossLayer(int dim, ParamLayout* layout) : dim_(dim) {
  w_ = layout->Add(size_t(dim) * dim);
  b_ = layout->Add(dim);
}

void CrossLayer::Init(std::mt19937* rng, float* params) const {
  FillUniform(rng, std::sqrt(6.0f / (2.0f * dim_)), params + w_,
              size_t(dim_) * dim_);
  std::fill(params + b_, params + b_ + dim_, 0.0f);
}

void CrossLayer::Forward(const float* params, const Mat& x0, const Mat& x,
                         Mat* u, Mat* y) const {
  Eigen::Map<const Eigen::RowVectorXf> b(params + b_, dim_);
  eigen_assert(x.cols() == dim_);
  u->resize(x.rows(), dim_);
  Gemm(false, false, int(x.rows()), dim_, dim_, x.data(), params + w_, false,
       u->data());
  u->rowwise() += b;
  *y = x0.cwiseProduct(*u) + x;
}

void CrossLayer::Backward(const float* params, const Mat& x0, const Mat& x,
                          const Mat& u, const Mat& dy, float* grads, Mat* dx0,
                          Mat* dx) const {
  Eigen::Map<Eigen::RowVectorXf> db(grads + b_, dim_);
  const Mat du = dy.cwiseProduct(x0);
  eigen_assert(x.cols() == dim_ && du.cols() == dim_ && x.rows() == du.rows());
  Gemm(true, false, dim_, dim_, int(x.rows()), x.data(), du.data(), true,
       grads + w_);
  db += du.colwise().sum();
  *dx0 += dy.cwiseProduct(u);
  dx->resize(dy.rows(), dim_);
  Gemm(false, true, int(dy.rows()), dim_, dim_, du.data(), params + w_, false,
       dx->data());
  *dx += dy;
}

double SigmoidCrossEntropy(const Mat& logits, const float* labels, float* probs,
                           Mat* dlogits) {
  const Eigen::Index n = logits.rows();
  dlogits->resize(n, 1);
  double loss = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    loss += SigmoidLoss(logits(i, 0), labels[i], &probs[i]);
    (*dlogits)(i, 0) = probs[i] - labels[i];
  }
  return loss;
}

FieldWidths UniformWidths(int fields, int dim) {
  FieldWidths w;
  for (int f = 0; f < fields; ++f) {
    w.dims.push_back(dim);
    w.offsets.push_back(f * dim);
  }
  w.width = fields * dim;
  return w;
}

void SumPoolForward(const PoolingInput& in, const float* rows, int row_dim,
                    int fields, int dim, Mat* e) {
  SumPoolForward(in, rows, row_dim, UniformWidths(fields, dim), e);
}

void SumPoolBackward(const PoolingInput& in, const Mat& de, int row_dim,
                     int fields, int dim, float* grads) {
  SumPoolBackward(in, de, row_dim, UniformWidths(fields, dim), grads);
}

void SumPoolForward(const PoolingInput& in, const float* rows, int row_dim,
                    const FieldWidths& w, Mat* e) {
  const int fields = int(w.dims.size());
  e->setZero(in.examples, w.width);
  for (size_t i = 0; i < in.examples; ++i) {
    float* out = e->row(i).data();
    for (uint32_t j = in.offsets[i]; j < in.offsets[i + 1]; ++j) {
      const int slot = in.slots[j];
      if (slot < 1 || slot > fields) continue;
      const float* v = rows + size_t(in.row_of_sign[j]) * row_dim + 1;
      float* dst = out + w.offsets[slot - 1];
      for (int d = 0; d < w.dims[slot - 1]; ++d) dst[d] += v[d];
    }
  }
}

void SumPoolBackward(const PoolingInput& in, const Mat& de, int row_dim,
                     const FieldWidths& w, float* grads) {
  const int fields = int(w.dims.size());
  for (size_t i = 0; i < in.examples; ++i) {
    const float* g = de.row(i).data();
    for (uint32_t j = in.offsets[i]; j < in.offsets[i + 1]; ++j) {
      const int slot = in.slots[j];
      if (slot < 1 || slot > fields) continue;
      float* dst = grads + size_t(in.row_of_sign[j]) * row_dim + 1;
      const float* src = g + w.offsets[slot - 1];
      for (int d = 0; d < w.dims[slot - 1]; ++d) dst[d] += src[d];
    }
  }
}

}  // namespace sampan
