// CollectiveRankMerge: sums each lockstep step's sparse gradients across the
// ranks of a `sampan run` HYBRID or SYNC job (trainer/step_loop.h RankMerge).
//
// Why: the ranks of a lockstep job begin a step together, so their batches
// are computed on the same rows; pushed separately, every row two ranks share
// would take two full Adagrad steps (bench/RESULTS.md 2026-12-03: two ranks
// at batch B learned like one at 2B with the rows' step x sqrt(2), -0.0036
// AUC). Merged, the ranks' step updates each row once, as one batch of all
// their examples would, and each key is pushed by one rank only.
//
// Promises:
//  - Merge() gathers every rank's keys (each rank's step already summed per
//    key) over a collective::Communicator (CPU: shared memory on one host,
//    else Gloo) and returns the keys this rank owns, Fmix64(key) % size (a
//    mixer independent of the shard map's, so every rank pushes to every
//    pserver), each with the sum over all ranks of its gradient, shows and
//    clicks, summed in rank order, so the result does not depend on timing.
//  - Every rank must call Merge() once per step, in the same order; a rank
//    with nothing to give passes an empty step.
//  - Every wait is bounded by `timeout`; a dead or stuck peer turns into
//    UNAVAILABLE or DEADLINE_EXCEEDED, and every later Merge() returns the
//    same error (the job restarts the group with a new generation).
//
// Cost: each rank receives every rank's summed step ((row_dim + 4) floats a
// key), a plain allgather: fine for the few ranks of a lockstep job; an
// all-to-all by owner would be the next step past ~8 ranks.
//
// Thread safety: none; the rank's one step loop owns the object.
#ifndef SAMPAN_TRAINER_RANK_MERGE_H_
#define SAMPAN_TRAINER_RANK_MERGE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collective/communicator.h"
#include "grpcpp/security/credentials.h"
#include "trainer/step_gradients.h"
#include "trainer/step_loop.h"

namespace sampan {

struct RankMergeOptions {
  // host:port of the coordinator (rendezvous through its key-value store)
  // and the channel credentials for it (null: plaintext).
  std::string coordinator_address;
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  int rank = 0;
  int size = 1;
  // Bounds the rendezvous and every step's exchange.
  absl::Duration timeout = absl::Seconds(60);
  // The collective group's generation (trainer/hybrid_dense.h): part of the
  // communicator's name, so a restarted group never meets the dead one.
  uint64_t generation = 0;
  // False forces Gloo's TCP even when every rank is on this host (tests).
  bool shared_memory = true;
};

class CollectiveRankMerge : public RankMerge {
 public:
  // Joins the "rank-merge" communicator; blocks until every rank joined.
  static absl::StatusOr<std::unique_ptr<CollectiveRankMerge>> Join(
      const RankMergeOptions& options);

  absl::Status Merge(int row_dim, StepGradients* step) override;

  // The rank that pushes `key` among `size` ranks.
  static int OwnerOf(uint64_t key, int size);

  // What the merges so far did: steps, keys this rank gave (its summed
  // steps), keys it got to push, and the time spent in the exchanges.
  struct Stats {
    uint64_t steps = 0;
    uint64_t keys_given = 0;
    uint64_t keys_pushed = 0;
    absl::Duration exchange_time;
  };
  const Stats& stats() const { return stats_; }

 private:
  CollectiveRankMerge(const RankMergeOptions& options,
                      std::unique_ptr<collective::Communicator> comm);
  // Adds a rank's records (`count` keys) that this rank owns to sum_.
  void Absorb(const float* records, size_t count, int row_dim);

  const RankMergeOptions options_;
  const std::unique_ptr<collective::Communicator> comm_;
  std::vector<float> counts_;   // keys per rank this step, in halves
  std::vector<float> send_;     // this rank's records
  std::vector<float> receive_;  // one peer's records at a time
  GradientSum sum_;             // this step's owned keys, summed in rank order
  Stats stats_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_RANK_MERGE_H_
