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
// A newer map may also move shards or change the fleet's size: Routes
// adopts it like any other (channels for pservers new to the map; pservers
// gone from it drop out), and whoever routes by it decides what a change of
// owners means for its own requests (SameRouting): a pull re-plans the keys
// not yet read, pushes are re-split under the push router's exclusive lock
// (trainer/client/push_router.h). A fetched map is refused (logged once per
// version, the old one kept) when it is invalid, has another shard count,
// or names no address for a pserver the old map did not have.
//
// A shard moving off a pserver is refused with the map version of the
// freeze, which the coordinator publishes only at the flip: each such
// version is chased (fetched without waiting for min_map_refresh) once;
// later refusals with it wait for min_map_refresh like an unreachable
// pserver, so a frozen shard does not turn into a stream of fetches.
//
// Thread-safe.
#ifndef SAMPAN_TRAINER_CLIENT_ROUTES_H_
#define SAMPAN_TRAINER_CLIENT_ROUTES_H_

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

  // Asks the coordinator now (one thread at a time, no rate limit) and
  // returns the newest routes: for calls that must reach every pserver of
  // the current map (Shrink).
  std::shared_ptr<const Table> Latest();

  uint64_t refreshes() const;

 private:
  // Fetches, checks and adopts a newer map than `now`'s; returns the
  // current routes afterwards.
  std::shared_ptr<const Table> FetchLocked(std::shared_ptr<const Table> now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(fetch_mu_);
  // The routes of `map`, reusing `old`'s channels where the address is the
  // same; an error when a pserver new to the map has no address.
  absl::StatusOr<std::shared_ptr<const Table>> Adopt(const Table& old,
                                                     ShardMap map);
  // Why the fetched `map` cannot replace `now`'s, or OK.
  absl::Status CheckFetched(const Table& now, const ShardMap& map) const;

  const PsClientOptions& options_;
  mutable std::mutex mu_;
  std::shared_ptr<const Table> current_;  // guarded by mu_
  uint64_t refreshes_ = 0;                // guarded by mu_
  // Held while asking the coordinator, so that one thread asks at a time;
  // taken before mu_, never while holding it.
  std::mutex fetch_mu_;
  absl::Time last_fetch_ = absl::InfinitePast();  // guarded by fetch_mu_
  uint64_t refused_version_ = 0;                  // guarded by fetch_mu_
  // The highest version a refusal named that was fetched for at once.
  uint64_t chased_version_ = 0;  // guarded by fetch_mu_
};

// True when `a` and `b` send every key to the same pserver index (same
// owners, same number of pservers); addresses may differ.
bool SameRouting(const ShardMap& a, const ShardMap& b);

// The shard map version a pserver's "not my shard" refusal carries, 0 when
// `context`'s trailing metadata has none.
uint64_t RefusedByMapVersion(const grpc::ClientContext& context);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CLIENT_ROUTES_H_
