// CTR models over pulled sparse rows plus dense weights held by the trainer:
// LR, FM, DNN, Wide&Deep, DeepFM and DCN-v2.
//
//   wide   = w_bias + sum_j w_j                  (LR, FM, Wide&Deep, DeepFM,
//                                                 DCN-v2)
//   e      = per-field sum of the rows' v        (B x fields*dim)
//   fm     = FmInteraction(e)                    (FM, DeepFM)
//   deep   = MLP(cross^L(e)) -> 1                (DNN, Wide&Deep, DeepFM; with
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

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/data/batch.h"
#include "trainer/model/layers.h"

namespace sampan {

enum class CtrKind { kLr, kFm, kDnn, kWideDeep, kDeepFm, kDcnV2 };

struct CtrModelOptions {
  CtrKind kind = CtrKind::kDeepFm;
  // Number of fields (slots 1..fields); Criteo has 39.
  int fields = 39;
  // Embedding width per field (ignored by LR).
  int embedding_dim = 8;
  // Widths of the MLP's hidden ReLU layers (deep models only).
  std::vector<int> hidden = {400, 400, 400};
  // DCN-v2 cross layers before the MLP.
  int cross_layers = 3;
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

  // Per-thread activations, reused across steps.
  struct Workspace {
    Mat e, de, fm_sum, fm_out, logits, dlogits, dh, dprev;
    std::vector<Mat> x, u;  // cross layer inputs and x W + b
    std::vector<Mat> h;     // MLP layer inputs; h.back() the last hidden
  };

  // Forward, and backward when `sparse_grads` is not null. `row_of_sign[j]`
  // indexes `rows` for batch.signs[j], `bias_row` the bias. Gradients of the
  // summed log loss are added per row to sparse_grads (caller zeroes) and
  // per weight to dense_grads (caller zeroes; may be null for LR/FM).
  // Writes probabilities; returns the summed log loss.
  double Step(const Batch& batch, const std::vector<uint32_t>& row_of_sign,
              uint32_t bias_row, const float* rows, const float* dense,
              float* sparse_grads, float* dense_grads, float* probs,
              Workspace* ws) const;

 private:
  bool wide() const { return kind_ != CtrKind::kDnn; }
  bool fm() const { return kind_ == CtrKind::kFm || kind_ == CtrKind::kDeepFm; }
  bool deep() const { return kind_ != CtrKind::kLr && kind_ != CtrKind::kFm; }
  void DeepForward(const float* dense, Workspace* ws) const;
  void DeepBackward(const float* dense, float* dense_grads,
                    Workspace* ws) const;

  CtrKind kind_;
  int fields_, dim_;
  uint64_t seed_;
  ParamLayout layout_;
  std::vector<CrossLayer> cross_;
  std::vector<Linear> mlp_;  // hidden layers, then the 1-wide output
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_CTR_MODEL_H_
