// HybridDense: the dense weights of a deep model in one rank of a
// multi-trainer job, kept bitwise identical on every rank by synchronous
// gradient averaging (the "hybrid" mode: sparse rows stay asynchronous on the
// pservers, see trainer.h).
//
// Promises:
//  - After Create() every rank holds rank 0's initial weights (broadcast).
//  - Each step averages the ranks' dense gradients (DenseAllReducer over a
//    collective::Communicator) and applies one optimizer step with that same
//    average on every rank, so the weights stay bitwise identical (the
//    allreduce result is bitwise identical on all ranks and the optimizer is
//    deterministic).
//  - The allreduce overlaps the backward pass: gradients are registered per
//    layer (CtrModel::GradBlocks) and fused into buckets of `bucket_bytes`;
//    grad_ready(), passed to CtrModel::Step, starts a bucket's allreduce on
//    the reducer's thread as soon as its layers are done, while backward
//    goes on with the earlier layers (and the trainer with the sparse push).
//  - Ranks agree on the number of steps without knowing their batch counts
//    in advance: the "this rank trained a batch" flag rides in the gradient
//    allreduce as one extra float. When any rank is out of data, that step's
//    dense update is dropped on every rank and Step() reports the end; the
//    ranks that still had a batch have pushed its sparse gradients already.
//  - Every `check_every` steps, and always at the end (Finish), a 64-bit hash
//    of the weights is compared across ranks; a mismatch fails every rank
//    with INTERNAL naming the step.
//
// Thread safety: none. One thread (the rank's step loop) owns the object;
// weights() may be read by others only once the step loop has ended. The
// gradient hook runs on that thread too (inside CtrModel::Step).
// Collectives: two communicators, "hybrid-grads" (owned by the
// DenseAllReducer while it lives) and "hybrid-ctl" (broadcast, hash checks),
// joined in that order on every rank, with "-g<generation>" appended after
// a restart of the group. Every wait is bounded by `timeout`.
#ifndef SAMPAN_TRAINER_HYBRID_DENSE_H_
#define SAMPAN_TRAINER_HYBRID_DENSE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collective/communicator.h"
#include "collective/dense_allreducer.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/dense_optimizer.h"
#include "trainer/model/model_io.h"

namespace sampan {

struct HybridDenseOptions {
  // host:port of the coordinator (rendezvous through its key-value store).
  std::string coordinator_address;
  // This trainer's rank and the number of trainers.
  int rank = 0;
  int size = 1;
  // Bounds the rendezvous and every collective call.
  absl::Duration timeout = absl::Seconds(60);
  // Compare the weights' hash across ranks every this many steps; 0: only
  // at the end. The trainer reads it from SAMPAN_DENSE_CHECK_EVERY.
  uint64_t check_every = 0;
  DenseOptimizerOptions optimizer;
  // Target bytes of one fused allreduce. Small enough that DeepFM's 1.8 MB
  // of MLP gradients make several buckets, whose allreduce can start before
  // backward ends; large enough that per-call latency stays negligible.
  size_t bucket_bytes = 256 << 10;
  // Tests only: this rank nudges one weight after the broadcast, so the
  // hash check must fail (SAMPAN_DENSE_TEST_SKEW_RANK). -1: none.
  int skew_rank = -1;
  // The collective group's generation, part of the communicators' names:
  // ranks restarted together after a crash (a new generation) never meet
  // the dead group's rendezvous keys.
  uint64_t generation = 0;
  // Credentials for the rendezvous RPCs to the coordinator (the job's
  // cluster.security); null means plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  // Resume: the weights and optimizer state every rank starts from (a
  // checkpoint's dense.bin) instead of fresh weights; null for none.
  const DenseModelState* initial = nullptr;
};

class HybridDense {
 public:
  // Initialises the weights with `model`, joins the communicators and
  // broadcasts rank 0's weights.
  static absl::StatusOr<std::unique_ptr<HybridDense>> Create(
      const CtrModel& model, const HybridDenseOptions& options);
  ~HybridDense();

  // The current weights (size() == model.dense_size() floats).
  size_t size() const { return n_; }
  const float* weights() const { return weights_; }
  // Starts a step: zeroes the gradients. `trained` says whether this rank
  // computes a gradient this step, for a batch of `batch_size` examples.
  void BeginStep(bool trained, size_t batch_size);
  // This step's gradient buffer: CtrModel::Step adds the summed-loss
  // gradient into it (only when BeginStep said `trained`).
  float* grads() { return grads_; }
  // The hook for CtrModel::Step: a block's gradient is final, so it is
  // scaled to the per-example mean and its bucket's allreduce may start.
  // Valid while this object lives.
  const CtrModel::GradReadyFn& grad_ready() const { return grad_ready_; }

  // Ends the step: finishes every allreduce (blocks the hook never reported
  // are reduced now) and applies the average. Returns true when every rank
  // trained (the averaged step was applied), false when some rank is out of
  // data (nothing applied; training ends).
  absl::StatusOr<bool> Step();

  // How long the last Step() waited for allreduces still in flight: the
  // communication that backward did not hide.
  absl::Duration last_wait() const { return last_wait_; }

  // Compares the final weights' hash across ranks; returns it.
  absl::StatusOr<uint64_t> Finish();

  uint64_t steps() const { return steps_; }
  // The weights with the optimizer's state, for model_io.h.
  DenseModelState State() const;
  // FNV-1a over the weights' bytes.
  uint64_t Hash() const;

 private:
  HybridDense(const HybridDenseOptions& options, const CtrModel& model);
  absl::Status Restore(const DenseModelState& state);
  absl::Status CheckHash();
  void BlockReady(int block);

  const HybridDenseOptions options_;
  const size_t n_;  // dense weights
  // Both arrays start on a 64-byte boundary on every rank. Why: Eigen
  // vectorises the optimizer from the destination's first aligned element,
  // peeling the head into scalar code, and with EIGEN_FAST_MATH its vector
  // sqrt (rsqrt + a Newton step) rounds differently from the scalar one; so
  // ranks whose weights sat at different alignments diverged after tens of
  // steps. Equal alignment means equal code paths, hence equal bits.
  std::vector<float> storage_;
  float* weights_;  // n_ floats inside storage_
  float* grads_;    // n_ gradients, then the "trained" flag
  // The reducer's buffers: 0 the flag, 1 + b block b of GradBlocks().
  const std::vector<CtrModel::GradBlock> blocks_;
  std::vector<char> reported_;  // per block, this step
  float scale_ = 1;             // 1 / batch size, this step
  CtrModel::GradReadyFn grad_ready_;
  absl::Duration last_wait_;
  std::unique_ptr<DenseOptimizer> optimizer_;
  std::unique_ptr<collective::Communicator> grads_comm_, ctl_comm_;
  std::unique_ptr<collective::DenseAllReducer> reducer_;
  uint64_t steps_ = 0;  // applied steps
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_HYBRID_DENSE_H_
