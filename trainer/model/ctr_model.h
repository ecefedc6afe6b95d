// CTR models over pulled sparse rows plus dense weights held by the trainer:
// LR, FM, DNN, Wide&Deep, DeepFM and DCN-v2.
//
//   wide   = w_bias + sum_j w_j                  (LR, FM, Wide&Deep, DeepFM,
//                                                 DCN-v2)
//   e      = per-field sum of the rows' v        (B x fields*dim)
//   x0     = [e, d] with d the batch's dense inputs (when dense_inputs > 0;
//            they also add a linear term d w_d + b_d to the logit)
//   fm     = FmInteraction(e)                    (FM, DeepFM)
//   deep   = MLP(cross^L(x0)) -> 1               (DNN, Wide&Deep, DeepFM; with
//                                                 L cross layers for DCN-v2)
//   logit  = wide + fm + deep
//
// Sparse rows are [w, v[dim]] from the table (the bias is the row of
// kBiasSign); a sign's field is its slot - 1 (Batch::slots). Dense weights
// are one flat array (see layers.h) owned by the caller, so the same model
// object serves many threads, each with its own Workspace.
//
// Thread safety: const methods are safe to call concurrently with distinct
// Workspaces and output buffers.
#ifndef SAMPAN_TRAINER_MODEL_CTR_MODEL_H_
#define SAMPAN_TRAINER_MODEL_CTR_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trainer/data/batch.h"
#include "trainer/model/gpu_mlp.h"
#include "trainer/model/layers.h"

namespace sampan {

enum class CtrKind { kLr, kFm, kDnn, kWideDeep, kDeepFm, kDcnV2 };

struct CtrModelOptions {
  CtrKind kind = CtrKind::kDeepFm;
  // Number of fields (slots 1..fields); Criteo has 39.
  int fields = 39;
  // Embedding width per field (ignored by LR): the table's row width.
  int embedding_dim = 8;
  // Per-field widths (field f = slot f + 1) <= embedding_dim: field f uses
  // the first field_dims[f] floats of its rows' v. Empty, short or 0 entries
  // mean embedding_dim. Not for FM / DeepFM (their interaction needs one
  // width); the caller checks that.
  std::vector<int> field_dims;
  // Widths of the MLP's hidden ReLU layers (deep models only).
  std::vector<int> hidden = {400, 400, 400};
  // DCN-v2 cross layers before the MLP.
  int cross_layers = 3;
  // Dense inputs per example (Batch::dense), e.g. Criteo's 13 log-scaled
  // integers: a linear term for every model, and beside the embeddings as
  // input to the cross layers / MLP of deep models.
  int dense_inputs = 0;
  // Seeds the dense weights' initialisation.
  uint64_t seed = 1;
};

// One named block of the dense weights (a matrix or a bias row), in the
// order the blocks lie in the flat array.
struct DenseBlock {
  std::string name;  // "mlp0.W", "mlp0.b", "cross1.W", ...
  int rows = 0, cols = 0;
};

class CtrModel {
 public:
  explicit CtrModel(const CtrModelOptions& options);

  CtrKind kind() const { return kind_; }
  int fields() const { return fields_; }
  // 0 for LR.
  int embedding_dim() const { return dim_; }
  // The dense weights' blocks; their sizes sum to dense_size().
  std::vector<DenseBlock> DenseBlocks() const;

  // Floats per pulled sparse row: 1 + embedding_dim (1 for LR).
  int row_dim() const { return dim_ + 1; }
  // Floats of dense weights (0 for LR and FM).
  size_t dense_size() const { return layout_.size(); }
  void InitDense(float* dense) const;
  // Multiply-adds of the dense part per example (forward), for FLOP counts.
  double DenseMacsPerExample() const;

  // A block of dense weights whose gradient is complete at one point of
  // the backward pass (one layer's W and b): floats [offset, offset+count).
  struct GradBlock {
    size_t offset, count;
  };
  // Every dense weight in exactly one block, in the order backward
  // completes them (the output layer first), the dense inputs' linear term
  // last. Empty for LR and FM without dense inputs.
  std::vector<GradBlock> GradBlocks() const;
  // Called with a GradBlocks() index once that block's gradient is final.
  using GradReadyFn = std::function<void(int block)>;

  // The MLP's layers, last the 1-wide output (for GpuMlp::Create).
  const std::vector<Linear>& mlp() const { return mlp_; }

  // Per-thread activations, reused across steps.
  struct Workspace {
    Mat e, de, fm_sum, fm_out, logits, dlogits, dh, dprev, mlp_out;
    Mat x0, dx0, wide_out;  // [e, dense] and its gradient; d w_d + b_d
    std::vector<Mat> x, u;  // cross layer inputs and x W + b
    std::vector<Mat> h;     // MLP layer inputs; h.back() the last hidden
    // FM's fused step: one example's per-field sums, which fields it
    // touched, and their sum and sum of squares over fields.
    std::vector<float> fm_fields, fm_total;
    std::vector<uint32_t> fm_stamp;
    std::vector<int> fm_touched;
    // When set, the MLP runs there (GpuMlp::Create(mlp(), dense_size())),
    // the cross layers and everything else on the CPU. Not owned. A device
    // error then aborts the process: a lost GPU cannot be trained around.
    GpuMlp* gpu = nullptr;
  };

  // Forward, and backward when `sparse_grads` is not null. `row_of_sign[j]`
  // indexes `rows` for batch.signs[j], `bias_row` the bias. Gradients of the
  // summed log loss are added per row to sparse_grads (caller zeroes) and
  // per weight to dense_grads (caller zeroes; may be null for LR/FM).
  // Writes probabilities; returns the summed log loss. `grad_ready`, when
  // set, hears of each GradBlocks() block as soon as its gradient is final,
  // while backward goes on (for allreduce overlapped with backward).
  double Step(const Batch& batch, const std::vector<uint32_t>& row_of_sign,
              uint32_t bias_row, const float* rows, const float* dense,
              float* sparse_grads, float* dense_grads, float* probs,
              Workspace* ws, const GradReadyFn& grad_ready = nullptr) const;

 private:
  bool wide() const { return kind_ != CtrKind::kDnn; }
  bool fm() const { return kind_ == CtrKind::kFm || kind_ == CtrKind::kDeepFm; }
  bool deep() const { return kind_ != CtrKind::kLr && kind_ != CtrKind::kFm; }
  // On ws->x0 (which is ws->e without dense inputs); DeepBackward
  // accumulates d x0 into *dx0 and reports each block to `grad_ready`.
  void DeepForward(const float* dense, const Mat& x0, Workspace* ws) const;
  void DeepBackward(const float* dense, float* dense_grads, const Mat& x0,
                    Mat* dx0, const GradReadyFn& grad_ready,
                    Workspace* ws) const;
  // Step for FM (no deep tower), fused per example; see ctr_model.cc.
  double FusedFmStep(const Batch& batch,
                     const std::vector<uint32_t>& row_of_sign,
                     uint32_t bias_row, const float* rows, const float* dense,
                     float* sparse_grads, float* dense_grads, float* probs,
                     Workspace* ws) const;
  // Fills ws->x0 = [e, batch.dense] (dense inputs only).
  void ConcatDense(const Batch& batch, Workspace* ws) const;

  CtrKind kind_;
  int fields_, dim_, dense_inputs_;
  uint64_t seed_;
  FieldWidths widths_;  // e's per-field columns
  ParamLayout layout_;
  std::vector<CrossLayer> cross_;
  std::vector<Linear> mlp_;         // hidden layers, then the 1-wide output
  std::vector<Linear> dense_wide_;  // d w_d + b_d when dense_inputs > 0
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_CTR_MODEL_H_
