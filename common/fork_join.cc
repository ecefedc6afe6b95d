#include "common/fork_join.h"

#include <algorithm>

#include "common/thread_priority.h"

namespace sampan {

ForkJoinPool::ForkJoinPool(int workers, const std::string& name, int nice) {
  // New threads start at their creator's nice value.
  const int base = CurrentThreadNice();
  for (int i = 0; i < workers; ++i) {
    threads_.emplace_back([this, name, nice, base, i] {
      SetCurrentThreadName(name + "-" + std::to_string(i));
      if (nice > 0) SetCurrentThreadNice(std::min(19, base + nice));
      WorkerLoop();
    });
  }
}

ForkJoinPool::~ForkJoinPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ForkJoinPool::Run(int parts, absl::FunctionRef<void(int)> fn) {
  if (parts <= 0) return;
  if (threads_.empty()) {
    for (int i = 0; i < parts; ++i) fn(i);
    return;
  }
  Call call(parts, fn);
  std::unique_lock<std::mutex> lock(mu_);
  calls_.push_back(&call);
  if (parts == 1) {
    work_.notify_one();
  } else {
    work_.notify_all();
  }
  call.done.wait(lock, [&call] { return call.finished == call.parts; });
}

size_t ForkJoinPool::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return calls_.size();
}

void ForkJoinPool::WorkerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [this] { return stopping_ || !calls_.empty(); });
    if (stopping_) return;
    Call* call = calls_.front();
    const int part = call->started++;
    if (call->started == call->parts) calls_.pop_front();
    lock.unlock();
    call->fn(part);
    lock.lock();
    // The caller may return (and `call` end) as soon as this is seen.
    if (++call->finished == call->parts) call->done.notify_one();
  }
}

}  // namespace sampan
