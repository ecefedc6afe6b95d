// Where the PS client sends each key: the newest shard map it has
// (common/shard_map.h) and a channel per pserver.
//
// Published routes are immutable: callers take a snapshot (Current), use it
// for one attempt of a call, and ask for newer routes when the attempt fails
// in a way a newer map may cure (Refresh): a pserver refused a key as not
// its own (ABORTED carrying kShardMapVersionKey), or could not be reached
// (it may have come back at another address). Refresh asks the
// coordinator (PsClientOptions::fetch_shard_map) at most once per
// min_map_refresh unless a pserver said its map is newer than ours, and only
// one thread asks at a time; the others then take what it got. A newer map
// replaces the channels of the pservers whose address changed; a pserver
// the coordinator has no address for (not registered again yet) keeps its
// old one.
//
// Shards do not move between pservers yet (issue 19): a map whose owners or
// pserver count differ from the routes' is not adopted (logged once per
// version), so routing stays what the pservers accept.
//
// Thread-safe.
#ifndef SAMPAN_TRAINER_CLIENT_ROUTES_H_
#define SAMPAN_TRAINER_CLIENT_ROUTES_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <vector>

#include "absl/time/time.h"
#include "common/shard_map.h"
#include "proto/ps.grpc.pb.h"
#include "trainer/client/ps_client.h"

namespace sampan {

// Pulls are sent with a generic stub whose response stays gRPC's received
// bytes, so that rows go from them straight to the caller's array
// (common/ps_wire.h). The method is the generated stub's Pull.
using PullStub = grpc::TemplatedGenericStub<ps::PullRequest, grpc::ByteBuffer>;
inline constexpr char kPullMethod[] = "/sampan.ps.SparseTable/Pull";

class Routes {
 public:
  struct Table {
    ShardMap map;
    std::vector<std::shared_ptr<ps::SparseTable::Stub>> stubs;
    std::vector<std::shared_ptr<PullStub>> pull_stubs;  // stubs' channels

    // Where pserver `p` serves, for error messages.
    const std::string& address(int p) const { return map.addresses[p]; }
  };

  explicit Routes(const PsClientOptions& options);

  std::shared_ptr<const Table> Current() const;

  // After an attempt with `seen` failed with `status`: the routes to try
  // next, newer ones when the coordinator has a newer map.
  std::shared_ptr<const Table> Refresh(const Table& seen,
                                       const grpc::Status& status,
                                       const grpc::ClientContext* context);

  uint64_t refreshes() const;

 private:
  std::shared_ptr<const Table> Adopt(const Table& old, ShardMap map);

  const PsClientOptions& options_;
  mutable std::mutex mu_;
  std::shared_ptr<const Table> current_;  // guarded by mu_
  uint64_t refreshes_ = 0;                // guarded by mu_
  // Held while asking the coordinator, so that one thread asks at a time;
  // taken before mu_, never while holding it.
  std::mutex fetch_mu_;
  absl::Time last_fetch_ = absl::InfinitePast();  // guarded by fetch_mu_
  uint64_t refused_version_ = 0;                  // guarded by fetch_mu_
};

// The shard map version a pserver's "not my shard" refusal carries, 0 when
// `context`'s trailing metadata has none.
uint64_t RefusedByMapVersion(const grpc::ClientContext& context);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CLIENT_ROUTES_H_
