// Runs the parts of calls on a fixed set of worker threads, calls in
// arrival order; each caller waits for its own parts.
//
// A server whose calls each hold one big computation (serving's forward
// pass of a 100-example request) has two ways to lose latency on a few
// cores. Computing on the calls' own threads lets a burst of calls share
// the cores among more threads than there are, so the scheduler slices
// them and every call in the burst ends late; and the computing threads
// delay the server's I/O (reading the next request, writing an answer).
// ForkJoinPool answers both: at most `workers` parts compute at once, the
// oldest call's parts first, so a call that arrives while the workers are
// busy waits its turn instead of slowing the calls ahead of it; a call
// split in parts uses every idle worker; and the workers may run at a
// lower priority (a higher nice value) than the threads that hand them
// work, which then preempt them.
//
// Promises: Run(parts, fn) returns once fn(0), ..., fn(parts - 1) have each
// run exactly once, on the workers (on the caller when there are none); fn
// must not throw and may run on several workers at once (distinct parts).
// Any number of threads may call Run at once. A call's parts are started
// only after every part of the calls queued before it has started.
//
// Thread-safe. `mu_` guards the queue of calls and each call's counts of
// parts started and finished; fn runs without it.
#ifndef SAMPAN_COMMON_FORK_JOIN_H_
#define SAMPAN_COMMON_FORK_JOIN_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"

namespace sampan {

class ForkJoinPool {
 public:
  // `workers` >= 0 threads named "<name>-<i>" (common/thread_priority.h),
  // each `nice` nice values above the creating thread's (at most 19; a
  // failure to set it only costs latency).
  ForkJoinPool(int workers, const std::string& name, int nice = 0);
  ~ForkJoinPool();  // joins the workers; no Run may be in progress

  ForkJoinPool(const ForkJoinPool&) = delete;
  ForkJoinPool& operator=(const ForkJoinPool&) = delete;

  int workers() const { return int(threads_.size()); }

  void Run(int parts, absl::FunctionRef<void(int)> fn);

  // Calls with parts not yet started (for tests and metrics).
  size_t waiting() const;

 private:
  struct Call {
    Call(int parts, absl::FunctionRef<void(int)> fn) : parts(parts), fn(fn) {}
    const int parts;
    absl::FunctionRef<void(int)> fn;
    int started = 0;               // guarded by mu_
    int finished = 0;              // guarded by mu_
    std::condition_variable done;  // finished == parts; waited under mu_
  };

  void WorkerLoop();

  mutable std::mutex mu_;
  std::condition_variable work_;  // a call queued, or stopping
  std::deque<Call*> calls_;       // with parts not started; guarded by mu_
  bool stopping_ = false;         // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace sampan

#endif  // SAMPAN_COMMON_FORK_JOIN_H_
