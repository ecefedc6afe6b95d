#include "trainer/model/ctr_model.h"

#include <random>

namespace sampan {

CtrModel::CtrModel(const CtrModelOptions& options)
    : kind_(options.kind),
      fields_(options.fields),
      dim_(options.kind == CtrKind::kLr ? 0 : options.embedding_dim),
      seed_(options.seed) {
  if (!deep()) return;
  const int width = fields_ * dim_;
  if (kind_ == CtrKind::kDcnV2) {
    for (int l = 0; l < options.cross_layers; ++l) {
      cross_.emplace_back(width, &layout_);
    }
  }
  int in = width;
  for (int h : options.hidden) {
    mlp_.emplace_back(in, h, &layout_);
    in = h;
  }
  mlp_.emplace_back(in, 1, &layout_);
}

void CtrModel::InitDense(float* dense) const {
  std::mt19937 rng(seed_);
  for (const CrossLayer& c : cross_) c.Init(&rng, dense);
  for (const Linear& l : mlp_) l.Init(&rng, dense);
}

std::vector<DenseBlock> CtrModel::DenseBlocks() const {
  std::vector<DenseBlock> blocks;
  const int width = fields_ * dim_;
  for (size_t l = 0; l < cross_.size(); ++l) {
    const std::string name = "cross" + std::to_string(l);
    blocks.push_back({name + ".W", width, width});
    blocks.push_back({name + ".b", 1, width});
  }
  for (size_t k = 0; k < mlp_.size(); ++k) {
    const std::string name = "mlp" + std::to_string(k);
    blocks.push_back({name + ".W", mlp_[k].in(), mlp_[k].out()});
    blocks.push_back({name + ".b", 1, mlp_[k].out()});
  }
  return blocks;
}

double CtrModel::DenseMacsPerExample() const {
  const double width = double(fields_) * dim_;
  double macs = cross_.size() * width * width;
  for (const Linear& l : mlp_) macs += double(l.in()) * l.out();
  return macs;
}

void CtrModel::DeepForward(const float* dense, Workspace* ws) const {
  ws->x.resize(cross_.size() + 1);
  ws->u.resize(cross_.size());
  ws->x[0] = ws->e;
  for (size_t l = 0; l < cross_.size(); ++l) {
    cross_[l].Forward(dense, ws->e, ws->x[l], &ws->u[l], &ws->x[l + 1]);
  }
  ws->h.resize(mlp_.size() + 1);
  ws->h[0] = ws->x.back();
  for (size_t k = 0; k < mlp_.size(); ++k) {
    mlp_[k].Forward(dense, ws->h[k], &ws->h[k + 1]);
    if (k + 1 < mlp_.size()) ReluForward(&ws->h[k + 1]);
  }
  ws->logits += ws->h.back();
}

void CtrModel::DeepBackward(const float* dense, float* dense_grads,
                            Workspace* ws) const {
  ws->dh = ws->dlogits;
  for (size_t k = mlp_.size(); k-- > 0;) {
    if (k + 1 < mlp_.size()) ReluBackward(ws->h[k + 1], &ws->dh);
    mlp_[k].Backward(dense, ws->h[k], ws->dh, dense_grads, &ws->dprev);
    ws->dh.swap(ws->dprev);
  }
  for (size_t l = cross_.size(); l-- > 0;) {
    cross_[l].Backward(dense, ws->e, ws->x[l], ws->u[l], ws->dh, dense_grads,
                       &ws->de, &ws->dprev);
    ws->dh.swap(ws->dprev);
  }
  ws->de += ws->dh;
}

double CtrModel::Step(const Batch& batch,
                      const std::vector<uint32_t>& row_of_sign,
                      uint32_t bias_row, const float* rows, const float* dense,
                      float* sparse_grads, float* dense_grads, float* probs,
                      Workspace* ws) const {
  const size_t n = batch.size();
  const int rd = row_dim();
  const PoolingInput pool{batch.offsets.data(), batch.slots.data(),
                          row_of_sign.data(), n};
  ws->logits.setZero(n, 1);
  if (wide()) {
    const float bias = rows[size_t(bias_row) * rd];
    for (size_t i = 0; i < n; ++i) {
      float s = bias;
      for (uint32_t j = batch.offsets[i]; j < batch.offsets[i + 1]; ++j) {
        s += rows[size_t(row_of_sign[j]) * rd];
      }
      ws->logits(i, 0) = s;
    }
  }
  const FmInteraction interaction(fields_, dim_);
  if (dim_ > 0) SumPoolForward(pool, rows, rd, fields_, dim_, &ws->e);
  if (fm()) {
    interaction.Forward(ws->e, &ws->fm_sum, &ws->fm_out);
    ws->logits += ws->fm_out;
  }
  if (deep()) DeepForward(dense, ws);
  const double loss =
      SigmoidCrossEntropy(ws->logits, batch.labels.data(), probs, &ws->dlogits);
  if (sparse_grads == nullptr) return loss;

  if (wide()) {
    float total = 0;
    for (size_t i = 0; i < n; ++i) {
      const float g = ws->dlogits(i, 0);
      total += g;
      for (uint32_t j = batch.offsets[i]; j < batch.offsets[i + 1]; ++j) {
        sparse_grads[size_t(row_of_sign[j]) * rd] += g;
      }
    }
    sparse_grads[size_t(bias_row) * rd] += total;
  }
  if (dim_ == 0) return loss;
  ws->de.setZero(n, size_t(fields_) * dim_);
  if (fm()) interaction.Backward(ws->e, ws->fm_sum, ws->dlogits, &ws->de);
  if (deep()) DeepBackward(dense, dense_grads, ws);
  SumPoolBackward(pool, ws->de, rd, fields_, dim_, sparse_grads);
  return loss;
}

}  // namespace sampan
