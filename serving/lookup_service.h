// A lookup shard of sharded serving (serving.shards: N > 1): the gRPC
// service sampan.serving.Lookup (proto/serving.proto) over the rows of one
// shard of the model, for predictor front ends (serving/shard_client.h).
//
// Shard i of N holds the keys k with PserverOfShard(ShardOf(k,
// table.num_shards), N) == i, the training shard map (common/hash.h), in a
// VersionStore (serving/row_store.h) that drops every other key while it
// loads. It follows the versions root as `sampan serve` does (ModelFollower:
// verified, refused when corrupt, swapped atomically) and keeps the last
// kKeptVersions versions it loaded, each a snapshot, so that a front end
// still answering from an older version gets that version's rows.
//
// Promises: a Lookup reads exactly the version it names; a version the
// shard does not hold is FAILED_PRECONDITION naming the ones it holds, a key
// of another shard INVALID_ARGUMENT naming it. Thread-safe.
#ifndef SAMPAN_SERVING_LOOKUP_SERVICE_H_
#define SAMPAN_SERVING_LOOKUP_SERVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "proto/serving.grpc.pb.h"
#include "serving/model_follower.h"
#include "serving/row_store.h"
#include "serving/serving.h"

namespace sampan {

struct LookupOptions {
  // The versions root followed (model, version, poll), this shard's store
  // (store_dir, built on across restarts; memory_budget_bytes) and the training
  // shard map (table_shards); the request limits and shard_addresses are
  // unused.
  ServingOptions serving;
  // This shard and the number of shards (serving.shards).
  uint32_t shard = 0;
  uint32_t shards = 1;
};

// Versions a shard keeps answering for.
inline constexpr size_t kKeptVersions = 3;

class LookupService final : public serving::Lookup::Service {
 public:
  explicit LookupService(const LookupOptions& options);
  ~LookupService() override;

  // Starts following the versions root; Stop ends that promptly.
  void Start();
  void Stop();
  // Checks the versions root once now.
  absl::Status Refresh();
  // True once a version is loaded (the health service's SERVING).
  bool ready() const;

  // Both count and time every call (serving/serving_metrics.h).
  grpc::Status Lookup(grpc::ServerContext* context,
                      const serving::LookupRequest* request,
                      serving::LookupResponse* response) override;
  grpc::Status Versions(grpc::ServerContext* context,
                        const serving::ShardVersionsRequest* request,
                        serving::ShardVersionsResponse* response) override;

 private:
  grpc::Status DoLookup(const serving::LookupRequest& request,
                        serving::LookupResponse* response);
  FollowOptions FollowOptionsOf();
  // on_load: keeps the version just swapped in among the last few.
  void Keep();

  const LookupOptions options_;
  // Created and used by the follower's refresh (one thread at a time);
  // published to Tick through store_open_ once open, never reset.
  std::unique_ptr<VersionStore> store_;
  std::atomic<VersionStore*> store_open_{nullptr};
  mutable std::mutex mu_;  // guards kept_; held only to copy or change it
  std::map<uint64_t, std::shared_ptr<const ServedModel>> kept_;
  ModelFollower follower_;
};

}  // namespace sampan

#endif  // SAMPAN_SERVING_LOOKUP_SERVICE_H_
