// The push path to one pserver: a bounded queue that merges gradients per
// key, and one sender thread that ships the merged batch with retries.
//
// Ownership and locking: `mu_` guards the pending batch, the requests owed
// (sequenced, to send before anything pending), the sending, park and stop
// flags, the routes the sender starts a batch with, and the first error;
// `changed_` is notified on every change of them (std::mutex rather than
// absl::Mutex so that ThreadSanitizer, which cannot see into Debian's
// uninstrumented Abseil, checks this locking). The sender thread owns the
// work it took out of the queue (under the lock) and sends it without the
// lock. Sequences are taken from the client's counter (shared by its queues)
// only by sender threads, one per request as it is first sent, so the
// pserver sees this writer's sequences increasing; a request owed keeps its
// sequence.
//
// Parking (the push router's reroute, trainer/client/push_router.h): Park
// asks the sender to stop at its next safe point: idle, between two
// requests, or after a failed attempt (it cuts a backoff short; a request in
// flight is awaited, within its deadline). There the sender hands back what
// it has not had acknowledged: the request it was retrying (sequence kept)
// and the rest of its owed requests go back to the owed list, the rows of
// its batch not yet sequenced back to the pending batch. A parked queue's
// owed requests and pending rows belong to the router until Resume.
//
// Held shards (issue 19: a move freezes one shard at its pserver). Every
// request is sent with partial_ok, so a pserver applies the keys of the
// shards it can and answers the frozen ones in moving_shards. The keys of
// such a shard are held: the part of the request with them (its sequence
// kept) goes to the held parts, in sequence order, and its rows not yet
// sequenced go to the held rows, while every other shard's keys flow on.
// Nothing of a held shard is sent past a held part of it, so the shard
// still sees this writer's sequences in increasing order. A probe, every
// backoff (initial_backoff doubling to max_backoff), sends everything held
// again in order: parts of a shard still frozen are held again; a shard
// moved away refuses them and the router reroutes them with the rest; a
// shard held for longer than retry_timeout fails the queue. Held work
// counts toward max_pending_keys, Flush waits for it, and the router takes
// it with the rest (TakeWork).
#ifndef SAMPAN_TRAINER_CLIENT_PUSH_QUEUE_H_
#define SAMPAN_TRAINER_CLIENT_PUSH_QUEUE_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "proto/ps.grpc.pb.h"
#include "trainer/client/client_metrics.h"
#include "trainer/client/merged_push.h"
#include "trainer/client/ps_client.h"
#include "trainer/client/routes.h"

namespace sampan {

class PushQueue {
 public:
  // Sends to pserver `pserver` by `table`, taking newer routes from
  // `routes` when a push fails in a way they may cure: at once when they
  // route keys as `table` does (a pserver's new address), otherwise by
  // calling `reroute` (the router then parks every queue and resumes this
  // one with the new routes). `sequences` is the writer's counter, shared
  // with its other queues. `routes` and `sequences` must outlive it.
  PushQueue(const PsClientOptions& options, int pserver, Routes* routes,
            std::atomic<uint64_t>* sequences, std::function<void()> reroute,
            std::shared_ptr<const Routes::Table> table);
  ~PushQueue();  // stops the sender after a Flush

  // Merges the rows at `positions` of the caller's arrays; never blocks.
  // Returns the first push error (merging nothing then).
  absl::Status Add(absl::Span<const uint64_t> keys, const float* grads,
                   const float* shows, const float* clicks,
                   const std::vector<uint32_t>& positions);

  // Backpressure: waits until the queue holds fewer than max_pending_keys
  // keys, until `give_up` (DEADLINE_EXCEEDED naming the pserver). Returns
  // the first push error.
  absl::Status WaitForRoom(absl::Time give_up);

  // Waits until everything queued or owed is acknowledged or has failed;
  // returns the first push error. A parked queue holding work waits for
  // the router.
  absl::Status Flush();

  void AddStats(PsClientStats* stats) const;

  // --- For the push router, while it holds its routing epoch exclusively.
  // Asks the sender to park (see the file comment).
  void Park();
  // Waits up to `timeout` for the sender to park; true once it has.
  bool WaitParked(absl::Duration timeout);
  // A parked queue's owed requests (appended to *owed) and pending rows
  // (swapped into *pending, which must be empty); the queue keeps neither.
  void TakeWork(std::vector<OwedPush>* owed, MergedPush* pending);
  // Queues `owed` to be sent, after the requests owed before it and before
  // anything pending.
  void Resend(OwedPush owed);
  // Merges the rows at `positions` of `rows` into the pending batch.
  void Requeue(const MergedPush& rows, const std::vector<uint32_t>& positions);
  // Lets a parked sender go on, by `table`.
  void Resume(std::shared_ptr<const Routes::Table> table);

 private:
  enum class Sent { kAcked, kParked, kFailed };

  void SenderLoop();
  // Sends `batch` in requests of at most max_keys_per_request keys, each
  // sequenced as it is first sent, holding the rows of held shards; on
  // parking hands the rest back (*parked).
  absl::Status SendBatch(const MergedPush& batch,
                         std::shared_ptr<const Routes::Table>* table,
                         bool* parked);
  // Sends `owed` in order, holding the parts of held shards; on parking
  // hands the rest back (*parked).
  absl::Status SendOwed(std::deque<OwedPush>* owed,
                        std::shared_ptr<const Routes::Table>* table,
                        bool* parked);
  // Sends `request`; on an answer naming moving shards, holds their part.
  Sent Send(const ps::PushRequest& request,
            std::shared_ptr<const Routes::Table>* table, absl::Status* error);
  // Retries `request` until acknowledged (*moving: the shards it named as
  // moving), a failure that is not transient (*error), the retry budget is
  // spent (*error), or a park request.
  Sent SendWithRetries(const ps::PushRequest& request,
                       std::shared_ptr<const Routes::Table>* table,
                       absl::Status* error, std::vector<uint32_t>* moving);
  // A copy of held_ (the sender reads it between requests).
  std::vector<uint8_t> HeldShards() const;
  // Holds `part` (sequenced), marking `shards` held; an error once a shard
  // has been held for longer than retry_timeout.
  absl::Status Hold(ps::PushRequest part, absl::Time since,
                    absl::Span<const uint32_t> shards);
  // Holds the rows at `positions` of `batch` (not sequenced).
  void HoldRows(const MergedPush& batch,
                const std::vector<uint32_t>& positions);
  // Takes everything held back into *owed (merged in sequence order) and
  // the pending batch, and clears held_, for a probe.
  void ReleaseHeldLocked(std::deque<OwedPush>* owed);
  bool ProbeDueLocked() const;
  bool HoldsLocked() const {
    return !held_owed_.empty() || held_rows_.size() > 0;
  }
  // The sender's hand-back at a safe point: `owed` in front of the owed
  // list, the rows of `batch` from `from` on into the pending batch.
  void HandBack(std::deque<OwedPush>* owed, const MergedPush* batch,
                size_t from);
  void MergeLocked(absl::Span<const uint64_t> keys, const float* grads,
                   const float* shows, const float* clicks,
                   const std::vector<uint32_t>& positions, absl::Time oldest);
  // Work to send now: held work counts once its probe is due.
  bool HasWorkLocked() const {
    return pending_.size() > 0 || !owed_.empty() || ProbeDueLocked();
  }
  bool ParkRequested() const;

  const PsClientOptions& options_;
  const int pserver_;
  Routes* const routes_;
  std::atomic<uint64_t>* const sequences_;
  const std::function<void()> reroute_;
  std::atomic<uint64_t> retries_{0}, sent_{0};
  const PushQueueMetrics metrics_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  MergedPush pending_;                          // guarded by mu_
  std::deque<OwedPush> owed_;                   // guarded by mu_
  std::shared_ptr<const Routes::Table> table_;  // guarded by mu_
  bool sending_ = false;                        // guarded by mu_
  absl::Time sending_since_;                    // guarded by mu_
  bool park_ = false;                           // guarded by mu_
  bool parked_ = false;                         // guarded by mu_
  bool stop_ = false;                           // guarded by mu_
  absl::Status error_;                          // guarded by mu_
  // Held shards (see the file comment), all guarded by mu_: held_[shard]
  // is 1 while held, held_ empty when none is; the held parts in sequence
  // order; the held rows; when the first of them was held, the next probe and
  // the probe backoff.
  std::vector<uint8_t> held_;
  std::deque<OwedPush> held_owed_;
  MergedPush held_rows_;
  absl::Time held_since_ = absl::InfiniteFuture();
  absl::Time next_probe_ = absl::InfiniteFuture();
  absl::Duration probe_backoff_;
  std::thread sender_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CLIENT_PUSH_QUEUE_H_
