// The PS client's push side: one PushQueue per pserver of the shard map the
// pushes are routed by, and the routing epoch that keeps them exactly once
// while shards move between pservers (issue 19).
//
// Why an epoch. Pservers apply a push on a shard only if its sequence is
// above the last one that shard applied for the writer, and a writer's
// sequences come from one counter. When shard s moves from pserver A to B,
// a request touching s that A refused (or that was in flight) must reach B
// before any request with a higher sequence touching s does, or B drops it
// as a duplicate. So a map that routes keys differently (SameRouting,
// routes.h) is installed all at once, by the rerouter thread:
//   1. it takes the epoch exclusively: no PushAsync is splitting keys;
//   2. it parks every queue's sender at a safe point (push_queue.h) and
//      takes back what each owes: requests sent but not acknowledged (their
//      sequences fixed) and pending rows (not sequenced yet);
//   3. it splits the owed requests by the new map, in increasing sequence
//      order, into the owed lists of the new owners' queues (a piece keeps
//      its request's sequence: a pserver that applied it before the move
//      exported that sequence with the shard, so the piece is a duplicate
//      there), and merges the pending rows into the new owners' queues;
//   4. it resumes every sender by the new map and releases the epoch.
// A sender sends its owed requests, in order, before taking any pending
// rows, whose sequences are then above every owed one; and keys of one
// shard are in one queue only. So every shard sees this writer's requests
// in increasing sequence order, none skipped. Queues for pservers new to
// the map are created in step 3; a pserver that left the map keeps its idle
// queue (the list only grows) and gets no keys.
//
// A sender asks for a reroute (RequestReroute) when routes.h hands it newer
// routes that send keys elsewhere after a failed attempt; until the router
// parks it, it goes on retrying with backoff. A shard frozen for a move
// (refused "is moving off" with the map version unchanged) is just retried
// with backoff within retry_timeout: nothing routes differently until the
// coordinator publishes the flip.
//
// Locking. `epoch_` (RoutingEpoch: shared for PushAsync's split and adds,
// exclusive for a reroute; a waiting reroute goes before new PushAsyncs)
// guards `table_`. `queues_` is written holding both `epoch_` exclusively
// and `queues_mu_`, so it may be read holding either. `mu_` guards the
// rerouter's wake-up flag and the reroute generation (odd while a reroute
// runs). Lock order: epoch_ -> a queue's mutex; queues_mu_ and mu_ are held
// alone. Nothing blocks while holding epoch_ shared (PushAsync waits for
// queue room after releasing it), so a reroute waits only for splits in
// progress and for senders to reach a safe point (within one deadline).
#ifndef SAMPAN_TRAINER_CLIENT_PUSH_ROUTER_H_
#define SAMPAN_TRAINER_CLIENT_PUSH_ROUTER_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "trainer/client/ps_client.h"
#include "trainer/client/push_queue.h"
#include "trainer/client/routes.h"

namespace sampan {

// A shared/exclusive lock on std::mutex (checked by ThreadSanitizer, unlike
// Debian's Abseil) that lets a waiting exclusive holder in before new shared
// ones, so a stream of PushAsync calls cannot hold a reroute off.
class RoutingEpoch {
 public:
  void LockShared();
  void UnlockShared();
  void Lock();
  void Unlock();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int shared_ = 0;          // guarded by mu_
  bool exclusive_ = false;  // guarded by mu_
  int waiting_ = 0;         // exclusive lockers waiting; guarded by mu_
};

class PushRouter {
 public:
  // Routes by `routes`' current table; `routes` must outlive the router.
  PushRouter(const PsClientOptions& options, Routes* routes);
  // Flushes (with the rerouter still running), then stops every thread.
  ~PushRouter();

  // PsClient::PushAsync: splits keys by the current routing into the
  // queues, then waits for room in the queues it used (up to
  // retry_timeout). Returns the first error of a queue it used.
  absl::Status Push(absl::Span<const uint64_t> keys,
                    absl::Span<const float> grads,
                    absl::Span<const float> shows,
                    absl::Span<const float> clicks);

  // PsClient::Flush: waits until every queue is empty with no reroute
  // having run meanwhile; returns the first push error.
  absl::Status Flush();

  void AddStats(PsClientStats* stats) const;

  // Called by a sender whose newer routes send keys elsewhere.
  void RequestReroute();

 private:
  void RerouteLoop();
  // Installs routes_->Current() if it routes differently (steps 1-4 above).
  void Reroute();
  // Step 3: hands what the queues owed to the queues of `next`.
  void Redistribute(const ShardMap& next, std::vector<OwedPush> owed,
                    std::vector<MergedPush> pending);
  std::unique_ptr<PushQueue> NewQueue(
      int pserver, std::shared_ptr<const Routes::Table> table);
  std::vector<PushQueue*> Queues() const;

  const PsClientOptions& options_;
  Routes* const routes_;
  std::atomic<uint64_t> sequences_{1};

  RoutingEpoch epoch_;
  std::shared_ptr<const Routes::Table> table_;  // guarded by epoch_
  mutable std::mutex queues_mu_;
  std::vector<std::unique_ptr<PushQueue>> queues_;  // see Locking above

  std::mutex mu_;
  std::condition_variable cv_;
  bool reroute_wanted_ = false;  // guarded by mu_
  bool stop_ = false;            // guarded by mu_
  uint64_t generation_ = 0;      // guarded by mu_; odd during a reroute
  std::thread rerouter_;
};

// The keys of `request` grouped by their owner in `map`: one request per
// owner, each with `request`'s table, writer and sequence, keys in their
// original order. `row_dim` floats of grads per key.
std::vector<std::pair<uint32_t, ps::PushRequest>> SplitByOwner(
    const ps::PushRequest& request, const ShardMap& map, uint32_t row_dim);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CLIENT_PUSH_ROUTER_H_
