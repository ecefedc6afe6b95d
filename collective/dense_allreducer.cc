#include "collective/dense_allreducer.h"

#include <algorithm>
#include <cstring>

namespace sampan {
namespace collective {

DenseAllReducer::DenseAllReducer(Communicator* comm,
                                 std::vector<absl::Span<float>> buffers,
                                 const DenseAllReducerOptions& options)
    : comm_(comm), buffers_(std::move(buffers)), options_(options) {
  const size_t bucket_elements =
      std::max<size_t>(1, options_.bucket_bytes / sizeof(float));
  bucket_of_.resize(buffers_.size());
  for (int i = 0; i < static_cast<int>(buffers_.size()); ++i) {
    if (buckets_.empty() || buckets_.back().elements >= bucket_elements) {
      buckets_.emplace_back();
      buckets_.back().first = i;
    }
    Bucket& b = buckets_.back();
    b.last = i + 1;
    b.elements += buffers_[i].size();
    bucket_of_[i] = static_cast<int>(buckets_.size()) - 1;
  }
  for (Bucket& b : buckets_) {
    if (b.last - b.first > 1) b.fused.resize(b.elements);
  }
  absl::MutexLock lock(&mu_);
  ready_.assign(buckets_.size(), 0);
  worker_ = std::thread([this] { WorkerLoop(); });
}

DenseAllReducer::~DenseAllReducer() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  worker_.join();
}

void DenseAllReducer::MarkReady(int index) {
  absl::MutexLock lock(&mu_);
  ++ready_[bucket_of_[index]];
}

absl::Status DenseAllReducer::Wait() {
  absl::MutexLock lock(&mu_);
  const int total = static_cast<int>(buckets_.size());
  auto done = [this, total]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return next_ == total; };
  // Each bucket's allreduce is bounded by its timeout, so this ends.
  mu_.Await(absl::Condition(&done));
  absl::Status s = status_;
  std::fill(ready_.begin(), ready_.end(), 0);
  next_ = 0;
  status_ = absl::OkStatus();
  return s;
}

absl::Status DenseAllReducer::AllReduceAll() {
  for (int i = 0; i < static_cast<int>(buffers_.size()); ++i) MarkReady(i);
  return Wait();
}

void DenseAllReducer::WorkerLoop() {
  absl::MutexLock lock(&mu_);
  const int total = static_cast<int>(buckets_.size());
  while (true) {
    auto runnable = [this, total]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (next_ == total) return stop_;
      const Bucket& b = buckets_[next_];
      return ready_[next_] == b.last - b.first || stop_;
    };
    mu_.Await(absl::Condition(&runnable));
    if (next_ == total ||
        (stop_ &&
         ready_[next_] < buckets_[next_].last - buckets_[next_].first)) {
      return;  // stop_ with nothing runnable
    }
    const int b = next_;
    const bool skip = !status_.ok();  // the communicator is broken anyway
    mu_.Unlock();
    absl::Status s = skip ? absl::OkStatus() : Reduce(buckets_[b]);
    mu_.Lock();
    if (status_.ok()) status_ = s;
    ++next_;
  }
}

absl::Status DenseAllReducer::Reduce(Bucket& bucket) {
  if (bucket.fused.empty()) {
    absl::Span<float> buf = buffers_[bucket.first];
    return comm_->AllReduce(buf.data(), buf.size(), ReduceOp::kAverage,
                            options_.timeout);
  }
  float* out = bucket.fused.data();
  for (int i = bucket.first; i < bucket.last; ++i) {
    std::memcpy(out, buffers_[i].data(), buffers_[i].size() * sizeof(float));
    out += buffers_[i].size();
  }
  absl::Status s = comm_->AllReduce(bucket.fused.data(), bucket.elements,
                                    ReduceOp::kAverage, options_.timeout);
  if (!s.ok()) return s;
  const float* in = bucket.fused.data();
  for (int i = bucket.first; i < bucket.last; ++i) {
    std::memcpy(buffers_[i].data(), in, buffers_[i].size() * sizeof(float));
    in += buffers_[i].size();
  }
  return absl::OkStatus();
}

}  // namespace collective
}  // namespace sampan
