// The push path to one pserver: a bounded queue that merges gradients per
// key, and one sender thread that ships the merged batch with retries.
//
// Ownership and locking: `mu_` guards the pending batch, the sending flag,
// the stop flag and the first error; `changed_` is notified on every change
// of them (std::mutex rather than absl::Mutex so that ThreadSanitizer, which
// cannot see into Debian's uninstrumented Abseil, checks this locking). The
// sender thread owns the batch it is sending (taken out of the queue under the
// lock, sent without it). Sequences are taken from the client's counter
// (shared by its queues) only by the sender thread, one per request, in
// order, so the pserver sees this writer's sequences increasing.
#ifndef SAMPAN_TRAINER_CLIENT_PUSH_QUEUE_H_
#define SAMPAN_TRAINER_CLIENT_PUSH_QUEUE_H_

#include <atomic>
#include <condition_variable>
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

class PushQueue {
 public:
  // Sends to pserver `pserver` by `routes` (which must outlive it), taking
  // newer routes when a push fails in a way they may cure.
  // `sequences` is the writer's counter, shared with its other queues.
  PushQueue(const PsClientOptions& options, int pserver, Routes* routes,
            std::atomic<uint64_t>* sequences);
  ~PushQueue();  // stops the sender after a Flush

  // Merges the rows at `positions` of the caller's arrays. Blocks while the
  // queue is full (up to retry_timeout). Returns the first push error.
  absl::Status Add(absl::Span<const uint64_t> keys, const float* grads,
                   const float* shows, const float* clicks,
                   const std::vector<uint32_t>& positions);

  // Waits until everything queued is acknowledged or has failed.
  absl::Status Flush();

  void AddStats(PsClientStats* stats) const;

 private:
  void SenderLoop();
  // Sends `batch` in requests of at most max_keys_per_request keys.
  absl::Status SendBatch(const MergedPush& batch);
  absl::Status SendWithRetries(ps::PushRequest* request);

  const PsClientOptions& options_;
  const int pserver_;
  Routes* const routes_;
  std::atomic<uint64_t>* const sequences_;
  std::atomic<uint64_t> retries_{0}, sent_{0};
  const PushQueueMetrics metrics_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  MergedPush pending_;        // guarded by mu_
  bool sending_ = false;      // guarded by mu_
  absl::Time sending_since_;  // guarded by mu_
  bool stop_ = false;         // guarded by mu_
  absl::Status error_;        // guarded by mu_
  std::thread sender_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_CLIENT_PUSH_QUEUE_H_
