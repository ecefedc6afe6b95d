// RankDense: one trainer rank's dense weights, kept whichever way the job
// keeps them (trainer.h):
//  - none: LR and FM without dense inputs;
//  - the pservers' dense table (ASYNC deep models; LR and FM with dense log
//    inputs): AsyncDense rows pulled and pushed with every batch, updated
//    there by model.dense_optimizer;
//  - HYBRID and SYNC: a HybridDense, bitwise equal on every rank, started
//    from a checkpoint's dense state, from init_model's, or from rank 0's
//    fresh weights, with the MLP on the GPU when model.dense_device allows.
//
// Thread safety: weights() is used by the step loop; every other method by
// the trainer's thread while no step loop runs.
#ifndef SAMPAN_TRAINER_RANK_DENSE_H_
#define SAMPAN_TRAINER_RANK_DENSE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "proto/job.pb.h"
#include "trainer/async_dense.h"
#include "trainer/client/ps_client.h"
#include "trainer/dense_weights.h"
#include "trainer/hybrid_dense.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/gpu_mlp.h"
#include "trainer/model/model_io.h"

namespace sampan {

struct RankDenseOptions {
  const JobConfig* config = nullptr;
  int rank = 0;
  const CtrModel* model = nullptr;
  // The dense table's client (HasDenseTable jobs); not owned.
  PsClient* ps_dense = nullptr;
  // HYBRID/SYNC: the collective group's rendezvous (the coordinator, with
  // the job's credentials), its generation, and the dense state to start
  // from ("" for none: init_model's or fresh weights).
  std::string coordinator_address;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  uint64_t generation = 0;
  std::string resume_path;
  DenseOptimizerOptions optimizer;
};

class RankDense {
 public:
  static absl::StatusOr<std::unique_ptr<RankDense>> Start(
      const RankDenseOptions& options);

  // The step loop's view of the weights (trainer/step_loop.h).
  DenseWeights* weights() { return weights_.get(); }
  // The MLP's device when it is the GPU; null otherwise.
  GpuMlp* gpu() { return gpu_.get(); }
  // HYBRID/SYNC.
  bool lockstep() const { return hybrid_ != nullptr; }

  // The weights as they are now (the dense table's pulled first): null
  // without any. Valid until the next call.
  absl::StatusOr<const float*> Current();
  // The weights and the optimizer's state now (the dense table's state
  // lives in its rows: weights only).
  absl::StatusOr<DenseModelState> State();
  // HYBRID/SYNC: the ranks compare their weights' hash, which is written to
  // <output_dir>/dense_hash-<rank>.txt. A no-op otherwise.
  absl::Status Finish();
  // HYBRID/SYNC: writes the state where the coordinator moves a
  // checkpoint's dense.bin from; returns the path.
  absl::StatusOr<std::string> SaveForCheckpoint(uint64_t steps);

 private:
  explicit RankDense(const RankDenseOptions& options) : o_(options) {}
  absl::Status StartLockstep();
  absl::Status PlaceDenseTower();

  const RankDenseOptions o_;
  std::unique_ptr<AsyncDense> async_;
  std::vector<float> pulled_;  // async_'s weights as last pulled
  std::unique_ptr<HybridDense> hybrid_;
  std::unique_ptr<GpuMlp> gpu_;
  std::unique_ptr<DenseWeights> weights_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_RANK_DENSE_H_
