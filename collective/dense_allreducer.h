// DenseAllReducer: averages a model's dense gradients across ranks each step,
// fused into buckets and overlapped with the backward pass.
//
// The trainer registers its gradient buffers once, in the order backward
// produces them. Each step it calls MarkReady(i) as buffer i is complete; a
// bucket (consecutive buffers up to `bucket_bytes`) whose buffers are all
// ready is averaged on a background thread while backward goes on. Wait()
// returns once every buffer holds the average over all ranks. Buckets are
// reduced in bucket order on every rank, so ranks never disagree on the order
// of collectives, and results are bitwise identical on every rank.
//
// Thread safety: MarkReady and Wait may be called from different threads; a
// buffer must not be written between its MarkReady and the next Wait.
#ifndef SAMPAN_COLLECTIVE_DENSE_ALLREDUCER_H_
#define SAMPAN_COLLECTIVE_DENSE_ALLREDUCER_H_

#include <cstddef>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collective/communicator.h"

namespace sampan {
namespace collective {

struct DenseAllReducerOptions {
  // Target size of one fused allreduce. Larger buckets reach higher
  // bandwidth; smaller ones start earlier in backward.
  size_t bucket_bytes = 4 << 20;
  // Timeout of each bucket's allreduce.
  absl::Duration timeout = absl::Seconds(60);
};

class DenseAllReducer {
 public:
  // `comm` and the memory behind `buffers` must outlive this object; no one
  // else may use `comm` while it lives.
  DenseAllReducer(Communicator* comm, std::vector<absl::Span<float>> buffers,
                  const DenseAllReducerOptions& options);
  // Finishes any step in flight, then stops the background thread.
  ~DenseAllReducer();

  DenseAllReducer(const DenseAllReducer&) = delete;
  DenseAllReducer& operator=(const DenseAllReducer&) = delete;

  // Buffer `index` is complete for this step. Each buffer once per step.
  void MarkReady(int index);
  // Waits for this step's buckets (every buffer must have been marked ready)
  // and readies the next step. Returns the first error of the step.
  absl::Status Wait();
  // MarkReady on every buffer, then Wait.
  absl::Status AllReduceAll();

  int num_buckets() const { return static_cast<int>(buckets_.size()); }

 private:
  struct Bucket {
    int first = 0, last = 0;  // buffers [first, last)
    size_t elements = 0;
    std::vector<float> fused;  // empty when the bucket is one buffer
  };

  void WorkerLoop();
  absl::Status Reduce(Bucket& bucket);

  Communicator* const comm_;
  const std::vector<absl::Span<float>> buffers_;
  const DenseAllReducerOptions options_;
  std::vector<int> bucket_of_;   // buffer -> bucket; immutable
  std::vector<Bucket> buckets_;  // fused storage: worker thread only

  absl::Mutex mu_;
  std::vector<int> ready_ ABSL_GUARDED_BY(mu_);  // per bucket, this step
  int next_ ABSL_GUARDED_BY(mu_) = 0;            // next bucket to reduce
  absl::Status status_ ABSL_GUARDED_BY(mu_);     // first error this step
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_;
};

}  // namespace collective
}  // namespace sampan

#endif  // SAMPAN_COLLECTIVE_DENSE_ALLREDUCER_H_
