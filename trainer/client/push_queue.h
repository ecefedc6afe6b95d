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
#include "common/hash_index.h"
#include "proto/ps.grpc.pb.h"
#include "trainer/client/client_metrics.h"
#include "trainer/client/ps_client.h"
#include "trainer/client/routes.h"

namespace sampan {

// Gradients merged per key: keys[i] owns grads[i*dim .. (i+1)*dim).
// `index` maps the first `indexed` keys to their entries. It is built only
// once a second batch is merged in: the first is appended as it came (its
// keys are unique when the caller deduplicated them, and a key listed twice
// is still summed by the pserver), and most batches reach the sender alone.
// The index probes `keys` itself (common/hash_index.h: 4 bytes a key, no
// copy of it), hence no copies or moves: Swap exchanges two batches.
struct MergedPush {
  MergedPush() = default;
  MergedPush(const MergedPush&) = delete;
  MergedPush& operator=(const MergedPush&) = delete;

  HashIndexOver<std::vector<uint64_t>> index{&keys};
  size_t indexed = 0;
  std::vector<uint64_t> keys;
  std::vector<float> grads, shows, clicks;
  absl::Time oldest;  // when the first gradient in here was queued

  size_t size() const { return keys.size(); }
  void Clear();  // keeps the index's buckets for the next merge
  void Swap(MergedPush& other);
  // Appends the rows at `positions` without looking for their keys.
  void Append(absl::Span<const uint64_t> keys, const float* grads,
              const float* shows, const float* clicks,
              const std::vector<uint32_t>& positions, uint32_t dim);
  // Adds them to the entries of their keys, appending keys not yet here.
  void Merge(absl::Span<const uint64_t> keys, const float* grads,
             const float* shows, const float* clicks,
             const std::vector<uint32_t>& positions, uint32_t dim);
  // One entry, unindexed: the step both of the above share.
  void AppendOne(uint64_t key, const float* grad, float show, float click,
                 uint32_t dim);
};

// A push request sequenced and sent (at least tried) but not acknowledged:
// it is resent with its sequence, wherever the map says its keys now live.
struct OwedPush {
  ps::PushRequest request;
  absl::Time since;  // when its oldest gradient was queued
};

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
  // sequenced as it is first sent; on parking hands the rest back.
  absl::Status SendBatch(const MergedPush& batch,
                         std::shared_ptr<const Routes::Table>* table);
  // Sends `owed` in order; on parking hands the rest back.
  absl::Status SendOwed(std::deque<OwedPush>* owed,
                        std::shared_ptr<const Routes::Table>* table);
  // Retries `request` until acknowledged, a failure that is not transient
  // (*error), the retry budget is spent (*error), or a park request.
  Sent SendWithRetries(const ps::PushRequest& request,
                       std::shared_ptr<const Routes::Table>* table,
                       absl::Status* error);
  // The sender's hand-back at a safe point: `owed` in front of the owed
  // list, the rows of `batch` from `from` on into the pending batch.
  void HandBack(std::deque<OwedPush>* owed, const MergedPush* batch,
                size_t from);
  void MergeLocked(absl::Span<const uint64_t> keys, const float* grads,
                   const float* shows, const float* clicks,
                   const std::vector<uint32_t>& positions, absl::Time oldest);
  bool HasWorkLocked() const { return pending_.size() > 0 || !owed_.empty(); }
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
  std::thread sender_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CLIENT_PUSH_QUEUE_H_
