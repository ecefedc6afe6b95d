#include "pserver/worker_pool.h"

#include "common/thread_priority.h"

namespace sampan {

WorkerPool::WorkerPool(int num_threads, size_t max_queued,
                       const std::string& name)
    : max_queued_(max_queued) {
  for (int i = 0; i < num_threads; ++i) {
    threads_.emplace_back([this, name, i] {
      SetCurrentThreadName(name + "-" + std::to_string(i));
      WorkerLoop();
    });
  }
}

WorkerPool::~WorkerPool() { Stop(); }

bool WorkerPool::Submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
  return true;
}

size_t WorkerPool::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void WorkerPool::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void WorkerPool::WorkerLoop() {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [this] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace sampan
