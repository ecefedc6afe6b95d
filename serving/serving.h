// `sampan serve`: online click probabilities from a trained model, the
// gRPC service sampan.serving.Predictor (proto/serving.proto).
//
// Promises:
//   - Every Predict call is answered from exactly one model version, the
//     one its response names: the call takes the version being served at
//     its start and keeps it to its end, however many swaps happen meanwhile.
//   - Probabilities are those of `sampan eval` for the same version and
//     examples (one scoring path, trainer/scoring.h).
//   - A new version is read and verified aside, then swapped in atomically;
//     a version that fails verification is refused (logged, counted in
//     sampan_serving_version_load_failures_total) and the previous one goes
//     on serving. No call fails because of a swap.
//   - With a store (store_dir), rows are read from RocksDB through the
//     snapshot of the call's version (serving/row_store.h), with the same
//     promises; a store's I/O error fails the call with UNAVAILABLE.
//   - As a front end of lookup shards (shard_addresses), it serves the
//     newest version every shard holds, gathers each call's rows from the
//     shards in parallel (serving/shard_client.h), and a call whose shard is
//     down or stopped fails within the lookup deadline with UNAVAILABLE.
//   - A malformed request fails alone, with INVALID_ARGUMENT naming the
//     example and the field; before any version is loaded calls fail with
//     UNAVAILABLE.
// Thread-safe: Predict may run on any number of threads at once.
#ifndef SAMPAN_SERVING_SERVING_H_
#define SAMPAN_SERVING_SERVING_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/fork_join.h"
#include "proto/job.pb.h"
#include "proto/serving.grpc.pb.h"
#include "serving/model_follower.h"
#include "serving/row_store.h"
#include "serving/shard_client.h"

namespace sampan {

struct ServingOptions {
  // A versions root (follows LATEST), a version directory or an exported
  // model directory (served as it is).
  std::string model;
  // With a versions root: serve this version only; 0 = follow LATEST.
  uint64_t version = 0;
  // Between checks of LATEST.
  absl::Duration poll = absl::Seconds(5);
  // Request limits (INVALID_ARGUMENT beyond them).
  size_t max_examples_per_request = 1000;
  size_t max_line_bytes = 1 << 16;
  // Rows in a local RocksDB store in this directory (serving/row_store.h),
  // built on across restarts; empty = rows in memory.
  std::string store_dir;
  // The store's memory (VersionStoreOptions::memory_budget_bytes).
  uint64_t memory_budget_bytes = 256ull << 20;
  // A predictor front end of sharded serving: the lookup shards' host:port
  // (serving/shard_client.h); rows are gathered from them and none are kept
  // here. Empty = rows here (memory or store_dir).
  std::vector<std::string> shard_addresses;
  // table.num_shards, the training shard map the shards split rows by.
  uint32_t table_shards = 1;
  // Of each Lookup RPC to a shard.
  absl::Duration lookup_deadline = absl::Seconds(1);
  // For the channels to the shards; null = plaintext.
  std::shared_ptr<grpc::ChannelCredentials> shard_credentials;
  // Workers that run the calls' forward passes (common/fork_join.h), in
  // arrival order and split across idle workers; 0 = one per usable core.
  int scoring_threads = 0;
};

// The job's serving: section; serving.model defaults to
// <output_dir>/versions.
ServingOptions ServingOptionsFromJob(const JobConfig& config);

class PredictService final : public serving::Predictor::Service {
 public:
  // Loads nothing until Start or Refresh.
  explicit PredictService(const ServingOptions& options);
  ~PredictService() override;

  // Starts following the model path (the first check at once); Stop ends
  // that promptly. Calls are answered either way.
  void Start();
  void Stop();
  // Checks the model path once now (ModelFollower::Refresh).
  absl::Status Refresh();
  // True once a version is loaded (the health service's SERVING).
  bool ready() const;
  // The version served now; null before one loaded.
  std::shared_ptr<const ServedModel> Current() const;

  grpc::Status Predict(grpc::ServerContext* context,
                       const serving::PredictRequest* request,
                       serving::PredictResponse* response) override;

 private:
  FollowOptions FollowOptionsOf(const ServingOptions& options);
  // Predict without metrics; counts the distinct signs with a row and
  // without.
  grpc::Status Handle(const serving::PredictRequest& request,
                      serving::PredictResponse* response, size_t* hits,
                      size_t* misses) const;

  // The follower's bring_rows with a store: opens it on first use.
  absl::StatusOr<std::shared_ptr<const RowSource>> BringRows(
      const std::vector<ChainMember>& chain);
  // Its on_tick: the age gauge and the store's metrics.
  void Tick(const ServedModel* served);

  const ServingOptions options_;
  // The store: created and used by the follower's refresh (one thread at a
  // time); `store_open_` publishes it to Tick once open, never reset.
  std::unique_ptr<VersionStore> store_;
  std::atomic<VersionStore*> store_open_{nullptr};
  // A front end's lookup shards; null otherwise.
  std::shared_ptr<ShardClients> shards_;
  ModelFollower follower_;
  // Runs the calls' forward passes (ScoreBatch's pool), at a nice value
  // above the gRPC threads'.
  mutable ForkJoinPool scoring_;
};

}  // namespace sampan

#endif  // SAMPAN_SERVING_SERVING_H_
