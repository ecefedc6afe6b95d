#include "trainer/model/ctr_model.h"

#include <random>

#include "common/log.h"

namespace sampan {
namespace {

// field_dims entries override dim (0 or missing: dim).
FieldWidths Widths(const CtrModelOptions& o, int fields, int dim) {
  FieldWidths w = UniformWidths(fields, dim);
  // The FM interaction needs one width (config validation says so).
  if (dim == 0 || o.kind == CtrKind::kFm || o.kind == CtrKind::kDeepFm) {
    return w;
  }
  w.width = 0;
  for (int f = 0; f < fields; ++f) {
    const int d = f < int(o.field_dims.size()) && o.field_dims[f] > 0
                      ? o.field_dims[f]
                      : dim;
    w.dims[f] = d;
    w.offsets[f] = w.width;
    w.width += d;
  }
  return w;
}

}  // namespace

CtrModel::CtrModel(const CtrModelOptions& options)
    : kind_(options.kind),
      fields_(options.fields),
      dim_(options.kind == CtrKind::kLr ? 0 : options.embedding_dim),
      dense_inputs_(options.dense_inputs),
      seed_(options.seed),
      widths_(Widths(options, fields_, dim_)) {
  if (dense_inputs_ > 0) dense_wide_.emplace_back(dense_inputs_, 1, &layout_);
  if (!deep()) return;
  const int width = widths_.width + dense_inputs_;
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
  // The linear term of the dense inputs starts at zero: its inputs reach
  // ~15 (log of counts), so a Glorot start would swamp the logit.
  for (const Linear& l : dense_wide_) {
    std::fill(dense, dense + size_t(l.in()) * l.out() + l.out(), 0.0f);
  }
  for (const CrossLayer& c : cross_) c.Init(&rng, dense);
  for (const Linear& l : mlp_) l.Init(&rng, dense);
}

std::vector<DenseBlock> CtrModel::DenseBlocks() const {
  std::vector<DenseBlock> blocks;
  if (dense_inputs_ > 0) {
    blocks.push_back({"dense_wide.W", dense_inputs_, 1});
    blocks.push_back({"dense_wide.b", 1, 1});
  }
  const int width = widths_.width + dense_inputs_;
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
  const double width = double(widths_.width) + dense_inputs_;
  double macs = cross_.size() * width * width;
  for (const Linear& l : mlp_) macs += double(l.in()) * l.out();
  return macs;
}

std::vector<CtrModel::GradBlock> CtrModel::GradBlocks() const {
  // Each layer's W and b are adjacent in the layout (layers.cc).
  std::vector<GradBlock> blocks;
  for (size_t k = mlp_.size(); k-- > 0;) {
    const Linear& l = mlp_[k];
    blocks.push_back({l.w_offset(), size_t(l.in() + 1) * l.out()});
  }
  for (size_t l = cross_.size(); l-- > 0;) {
    blocks.push_back({cross_[l].w_offset(), cross_[l].param_count()});
  }
  // Its gradient is final before the deep tower's; Step reports it then.
  for (const Linear& l : dense_wide_) {
    blocks.push_back({l.w_offset(), size_t(l.in() + 1) * l.out()});
  }
  return blocks;
}

void CtrModel::ConcatDense(const Batch& batch, Workspace* ws) const {
  const Eigen::Index n = ws->e.rows(), width = ws->e.cols();
  ws->x0.resize(n, width + dense_inputs_);
  ws->x0.leftCols(width) = ws->e;
  ws->x0.rightCols(dense_inputs_) =
      ConstMatMap(batch.dense.data(), n, dense_inputs_);
}

void CtrModel::DeepForward(const float* dense, const Mat& x0,
                           Workspace* ws) const {
  ws->x.resize(cross_.size() + 1);
  ws->u.resize(cross_.size());
  ws->x[0] = x0;
  for (size_t l = 0; l < cross_.size(); ++l) {
    cross_[l].Forward(dense, x0, ws->x[l], &ws->u[l], &ws->x[l + 1]);
  }
  if (ws->gpu != nullptr) {
    absl::Status s = ws->gpu->Forward(dense, ws->x.back(), &ws->mlp_out);
    if (!s.ok()) SAMPAN_LOG(FATAL) << s;
    ws->logits += ws->mlp_out;
    return;
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
                            const Mat& x0, Mat* dx0,
                            const GradReadyFn& grad_ready,
                            Workspace* ws) const {
  const int layers = static_cast<int>(mlp_.size());
  if (ws->gpu != nullptr) {
    // GpuMlp counts layers from the input; blocks count from the output.
    std::function<void(int)> ready;
    if (grad_ready) ready = [&](int k) { grad_ready(layers - 1 - k); };
    absl::Status s =
        ws->gpu->Backward(ws->dlogits, dense_grads, &ws->dh, ready);
    if (!s.ok()) SAMPAN_LOG(FATAL) << s;
  } else {
    ws->dh = ws->dlogits;
    for (int k = layers; k-- > 0;) {
      if (k + 1 < layers) ReluBackward(ws->h[k + 1], &ws->dh);
      mlp_[k].Backward(dense, ws->h[k], ws->dh, dense_grads, &ws->dprev);
      ws->dh.swap(ws->dprev);
      if (grad_ready) grad_ready(layers - 1 - k);
    }
  }
  for (size_t l = cross_.size(); l-- > 0;) {
    cross_[l].Backward(dense, x0, ws->x[l], ws->u[l], ws->dh, dense_grads, dx0,
                       &ws->dprev);
    ws->dh.swap(ws->dprev);
    if (grad_ready) grad_ready(layers + int(cross_.size() - 1 - l));
  }
  *dx0 += ws->dh;
}

namespace {

// FM without a deep tower runs per example rather than per layer: the wide
// sum, the pooled fields, the pairwise term, the loss and the scatter of
// gradients all touch one example's rows while they are in L1, and its
// per-field sums live in a fields x dim buffer instead of the B x fields*dim
// matrices e and de (SumPool and FmInteraction over those spent most of
// FM's cycles moving memory). Same function, same gradients.
class FusedFm {
 public:
  // `grads` (null when not training) is what Scatter adds to.
  FusedFm(const Batch& batch, const uint32_t* row_of_sign, const float* rows,
          float* grads, int fields, int dim, CtrModel::Workspace* ws)
      : batch_(batch),
        row_of_sign_(row_of_sign),
        rows_(rows),
        grads_(grads),
        fields_(fields),
        dim_(dim),
        ws_(ws) {
    ws->fm_fields.resize(size_t(fields) * dim_);
    ws->fm_stamp.assign(fields, 0);
    ws->fm_total.resize(2 * size_t(dim_));
    total_ = ws->fm_total.data();
    squares_ = ws->fm_total.data() + dim_;
  }

  // Example i's logit less the bias and dense terms; keeps what Scatter
  // needs.
  float Logit(size_t i) {
    const uint32_t begin = batch_.offsets[i], end = batch_.offsets[i + 1];
    pooled_ = !OneSignPerField(begin, end);
    for (int d = 0; d < dim_; ++d) total_[d] = squares_[d] = 0;
    const float wide = pooled_ ? PoolFields(begin, end) : SumRows(begin, end);
    float pairs = 0;
    for (int d = 0; d < dim_; ++d) pairs += total_[d] * total_[d] - squares_[d];
    return wide + 0.5f * pairs;
  }

  // Adds d loss / d row for example i's rows, given g = d loss / d logit:
  // d logit / d v_j = total - e_f for sign j of field f.
  void Scatter(size_t i, float g) const {
    const int dim = dim_;
    const size_t rd = size_t(dim) + 1;
    const float* fields = ws_->fm_fields.data();
    for (uint32_t j = batch_.offsets[i]; j < batch_.offsets[i + 1]; ++j) {
      const float* row = rows_ + row_of_sign_[j] * rd;
      float* grad = grads_ + row_of_sign_[j] * rd;
      grad[0] += g;
      if (!pooled_) {  // e_f is the row itself
        for (int d = 0; d < dim; ++d)
          grad[1 + d] += g * (total_[d] - row[1 + d]);
        continue;
      }
      const int f = int(batch_.slots[j]) - 1;
      if (f < 0 || f >= fields_) continue;
      const float* e = fields + size_t(f) * dim;
      for (int d = 0; d < dim; ++d) grad[1 + d] += g * (total_[d] - e[d]);
    }
  }

 private:
  // Slots strictly increasing within the model's fields (every Criteo and
  // Avazu row): each field's sum is its one row, so nothing need be pooled.
  bool OneSignPerField(uint32_t begin, uint32_t end) const {
    int last = 0;
    for (uint32_t j = begin; j < end; ++j) {
      const int slot = batch_.slots[j];
      if (slot <= last || slot > fields_) return false;
      last = slot;
    }
    return true;
  }

  // Rows and their gradients are scattered over buffers larger than L2 at
  // large batches; fetch a few signs ahead (into the next example too) so
  // that the loads here and Scatter's mostly hit.
  void PrefetchAhead(uint32_t j, size_t rd) const {
    if (j + kRowLookahead >= batch_.offsets.back()) return;
    const size_t ahead = row_of_sign_[j + kRowLookahead] * rd;
    __builtin_prefetch(rows_ + ahead);
    if (grads_ != nullptr) __builtin_prefetch(grads_ + ahead, 1);
  }

  // One sign per field: total and squares straight from the rows. Per-
  // coordinate accumulators: one running sum of squares would serialise
  // every add on the one before. Returns the wide sum.
  float SumRows(uint32_t begin, uint32_t end) {
    const int dim = dim_;
    const size_t rd = size_t(dim) + 1;
    float wide = 0;
    for (uint32_t j = begin; j < end; ++j) {
      PrefetchAhead(j, rd);
      const float* row = rows_ + row_of_sign_[j] * rd;
      wide += row[0];
      for (int d = 0; d < dim; ++d) {
        total_[d] += row[1 + d];
        squares_[d] += row[1 + d] * row[1 + d];
      }
    }
    return wide;
  }

  // The general case: per-field sums in ws->fm_fields, then total and
  // squares over the fields touched. Returns the wide sum.
  float PoolFields(uint32_t begin, uint32_t end) {
    const int dim = dim_;
    const size_t rd = size_t(dim) + 1;
    float* fields = ws_->fm_fields.data();
    const uint32_t stamp = ++stamp_;
    ws_->fm_touched.clear();
    float wide = 0;
    for (uint32_t j = begin; j < end; ++j) {
      PrefetchAhead(j, rd);
      const float* row = rows_ + row_of_sign_[j] * rd;
      wide += row[0];
      const int f = int(batch_.slots[j]) - 1;
      if (f < 0 || f >= fields_) continue;
      float* e = fields + size_t(f) * dim;
      if (ws_->fm_stamp[f] != stamp) {  // first sign of field f: no zeroing
        ws_->fm_stamp[f] = stamp;
        ws_->fm_touched.push_back(f);
        for (int d = 0; d < dim; ++d) e[d] = row[1 + d];
      } else {
        for (int d = 0; d < dim; ++d) e[d] += row[1 + d];
      }
    }
    for (int f : ws_->fm_touched) {
      const float* e = fields + size_t(f) * dim;
      for (int d = 0; d < dim; ++d) {
        total_[d] += e[d];
        squares_[d] += e[d] * e[d];
      }
    }
    return wide;
  }

  static constexpr uint32_t kRowLookahead = 8;

  const Batch& batch_;
  const uint32_t* const row_of_sign_;
  const float* const rows_;
  float* const grads_;
  const int fields_, dim_;
  CtrModel::Workspace* const ws_;
  float* total_;         // sum of the example's field sums, per coordinate
  float* squares_;       // sum of their squares, per coordinate
  bool pooled_ = false;  // the last Logit pooled fields (PoolFields)
  uint32_t stamp_ = 0;   // marks ws->fm_stamp entries of the last pooling
};

double FusedFmExamples(const Batch& batch, const uint32_t* row_of_sign,
                       float bias, const float* rows, int fields, int dim,
                       float* sparse_grads, float* bias_grad, float* probs,
                       CtrModel::Workspace* ws) {
  FusedFm fm(batch, row_of_sign, rows, sparse_grads, fields, dim, ws);
  double loss = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const float logit = ws->logits(i, 0) + bias + fm.Logit(i);
    loss += SigmoidLoss(logit, batch.labels[i], &probs[i]);
    const float g = probs[i] - batch.labels[i];
    ws->dlogits(i, 0) = g;
    if (sparse_grads == nullptr) continue;
    *bias_grad += g;
    fm.Scatter(i, g);
  }
  return loss;
}

}  // namespace

double CtrModel::FusedFmStep(const Batch& batch,
                             const std::vector<uint32_t>& row_of_sign,
                             uint32_t bias_row, const float* rows,
                             const float* dense, float* sparse_grads,
                             float* dense_grads, float* probs,
                             Workspace* ws) const {
  const size_t n = batch.size();
  const int rd = row_dim();
  ws->logits.setZero(n, 1);
  if (dense_inputs_ > 0) {
    const Mat d = ConstMatMap(batch.dense.data(), n, dense_inputs_);
    dense_wide_[0].Forward(dense, d, &ws->wide_out);
    ws->logits += ws->wide_out;
  }
  ws->dlogits.resize(n, 1);
  const float bias = rows[size_t(bias_row) * rd];
  float bias_grad = 0;
  const double loss =
      FusedFmExamples(batch, row_of_sign.data(), bias, rows, fields_, dim_,
                      sparse_grads, &bias_grad, probs, ws);
  if (sparse_grads == nullptr) return loss;
  sparse_grads[size_t(bias_row) * rd] += bias_grad;
  if (dense_inputs_ > 0) {
    const Mat d = ConstMatMap(batch.dense.data(), n, dense_inputs_);
    dense_wide_[0].Backward(dense, d, ws->dlogits, dense_grads, nullptr);
  }
  return loss;
}

double CtrModel::Step(const Batch& batch,
                      const std::vector<uint32_t>& row_of_sign,
                      uint32_t bias_row, const float* rows, const float* dense,
                      float* sparse_grads, float* dense_grads, float* probs,
                      Workspace* ws, const GradReadyFn& grad_ready) const {
  if (kind_ == CtrKind::kFm && dim_ > 0 && !batch.slots.empty()) {
    return FusedFmStep(batch, row_of_sign, bias_row, rows, dense, sparse_grads,
                       dense_grads, probs, ws);
  }
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
  const bool concat = dense_inputs_ > 0 && deep();
  if (dim_ > 0) SumPoolForward(pool, rows, rd, widths_, &ws->e);
  if (dense_inputs_ > 0) {
    const Mat d = ConstMatMap(batch.dense.data(), n, dense_inputs_);
    dense_wide_[0].Forward(dense, d, &ws->wide_out);
    ws->logits += ws->wide_out;
  }
  if (fm()) {
    interaction.Forward(ws->e, &ws->fm_sum, &ws->fm_out);
    ws->logits += ws->fm_out;
  }
  if (concat) ConcatDense(batch, ws);
  if (deep()) DeepForward(dense, concat ? ws->x0 : ws->e, ws);
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
  if (dense_inputs_ > 0) {
    const Mat d = ConstMatMap(batch.dense.data(), n, dense_inputs_);
    dense_wide_[0].Backward(dense, d, ws->dlogits, dense_grads, nullptr);
    if (grad_ready && deep()) {
      grad_ready(static_cast<int>(mlp_.size() + cross_.size()));
    }
  }
  if (dim_ == 0) return loss;
  const Eigen::Index width = widths_.width;
  ws->de.setZero(n, width);
  if (fm()) interaction.Backward(ws->e, ws->fm_sum, ws->dlogits, &ws->de);
  if (concat) {
    ws->dx0.setZero(n, width + dense_inputs_);
    DeepBackward(dense, dense_grads, ws->x0, &ws->dx0, grad_ready, ws);
    ws->de += ws->dx0.leftCols(width);
  } else if (deep()) {
    DeepBackward(dense, dense_grads, ws->e, &ws->de, grad_ready, ws);
  }
  SumPoolBackward(pool, ws->de, rd, widths_, sparse_grads);
  return loss;
}

}  // namespace sampan
