// A fixed pool of worker threads fed by a bounded queue.
//
// The pserver's gRPC callbacks run on gRPC's own threads and must not block;
// they hand table work to this pool instead. When the queue is full, Submit
// refuses the task so the caller can answer RESOURCE_EXHAUSTED and the client
// backs off: a server under overload sheds load instead of growing a queue
// without bound.
//
// Thread-safe. `mu_` guards the queue and the stopping flag; workers run
// tasks without it. Stop() runs every task already accepted, then joins.
// (std::mutex rather than absl::Mutex: Debian's Abseil is not built for
// ThreadSanitizer, which would then not see the locking.)
#ifndef SAMPAN_PSERVER_WORKER_POOL_H_
#define SAMPAN_PSERVER_WORKER_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sampan {

class WorkerPool {
 public:
  // Threads are named "<name>-<i>" (common/thread_priority.h).
  WorkerPool(int num_threads, size_t max_queued,
             const std::string& name = "worker");
  ~WorkerPool();  // calls Stop()

  // Queues `task`; false (task dropped) when the queue is full or stopping.
  bool Submit(std::function<void()> task);

  // Tasks waiting for a worker.
  size_t queued() const;

  // Runs every accepted task, then joins the workers. Idempotent; call from
  // one thread.
  void Stop();

 private:
  void WorkerLoop();

  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable ready_;            // queue non-empty or stopping
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;         // owned by the creator
};

}  // namespace sampan

#endif  // SAMPAN_PSERVER_WORKER_POOL_H_
