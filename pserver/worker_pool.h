// A fixed pool of worker threads fed by a bounded queue.
//
// The pserver's gRPC callbacks run on gRPC's own threads and must not block;
// they hand table work to this pool instead. When the queue is full, Submit
// refuses the task so the caller can answer RESOURCE_EXHAUSTED and the client
// backs off: a server under overload sheds load instead of growing a queue
// without bound.
//
// Thread-safe. Stop() runs every task already accepted, then joins.
#ifndef SAMPAN_PSERVER_WORKER_POOL_H_
#define SAMPAN_PSERVER_WORKER_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace sampan {

class WorkerPool {
 public:
  WorkerPool(int num_threads, size_t max_queued);
  ~WorkerPool();  // calls Stop()

  // Queues `task`; false (task dropped) when the queue is full or stopping.
  bool Submit(std::function<void()> task);

  // Tasks waiting for a worker.
  size_t queued() const;

  // Runs every accepted task, then joins the workers. Idempotent.
  void Stop();

 private:
  void WorkerLoop();

  const size_t max_queued_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace sampan

#endif  // SAMPAN_PSERVER_WORKER_POOL_H_
