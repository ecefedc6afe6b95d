// A trainer rank's running figures, which its heartbeat reports: examples
// trained, their summed log loss and streaming AUC, word vectors' tokens,
// data.stream passes done and rank 0's last pass result; the keys a stream
// pass pushed (its delta's rows); and the first error any of the rank's
// threads met.
//
// Promises: Trained counts a batch exactly once; Fill copies every figure
// under one lock, so a heartbeat never carries examples from one moment
// and loss from another; Fail keeps the first error and sets failed(),
// which the step loop and the pass schedule poll to stop.
//
// Thread-safe. `mu_` guards the figures and the error; the pushed keys
// have their own lock, so that the worker threads' counting stays short.
// std::mutex, not absl::Mutex: Debian's Abseil is not built for
// ThreadSanitizer, which checks this class (`make tsan`).
#ifndef SAMPAN_TRAINER_RANK_PROGRESS_H_
#define SAMPAN_TRAINER_RANK_PROGRESS_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "proto/coordinator.pb.h"
#include "trainer/eval/auc.h"
#include "trainer/step_loop.h"

namespace sampan {

class RankProgress {
 public:
  // `examples`: trained before this process (a checkpoint's rows).
  // `keep_keys`: remember the keys each batch pushed (data.stream jobs).
  RankProgress(uint64_t examples, bool keep_keys)
      : keep_keys_(keep_keys), examples_(examples) {}

  // A trained batch (any worker thread).
  void Trained(const Worker& w, double loss);
  // The keys pushed since the last call, each once; forgets them.
  std::vector<uint64_t> TakeKeys();
  // A data.stream pass is done. `result` (rank 0's; null elsewhere) gets the
  // examples trained so far and is kept as the last result.
  void PassDone(coord::PassResult* result);

  uint64_t examples() const;
  uint64_t tokens() const;

  void Fail(const absl::Status& status);
  absl::Status error() const;
  // True once Fail has seen an error.
  const std::atomic<bool>* failed() const { return &failed_; }

  // Examples, loss, AUC, passes and the last result, into a heartbeat.
  void Fill(coord::TrainerProgress* progress) const;

 private:
  const bool keep_keys_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;
  uint64_t examples_ ABSL_GUARDED_BY(mu_);
  double loss_sum_ ABSL_GUARDED_BY(mu_) = 0;
  StreamingAuc auc_ ABSL_GUARDED_BY(mu_);
  uint64_t tokens_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t passes_done_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<coord::PassResult> last_result_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::mutex keys_mu_;
  absl::flat_hash_set<uint64_t> keys_ ABSL_GUARDED_BY(keys_mu_);
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_RANK_PROGRESS_H_
