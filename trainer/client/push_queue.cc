#include "trainer/client/push_queue.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/thread_priority.h"
#include "common/retry.h"

namespace sampan {

void MergedPush::Clear() {
  index.Clear();
  indexed = 0;
  keys.clear();
  grads.clear();
  shows.clear();
  clicks.clear();
}

void MergedPush::Swap(MergedPush& other) {
  std::swap(index, other.index);
  std::swap(indexed, other.indexed);
  keys.swap(other.keys);
  grads.swap(other.grads);
  shows.swap(other.shows);
  clicks.swap(other.clicks);
  std::swap(oldest, other.oldest);
  index.Rebind(&keys);
  other.index.Rebind(&other.keys);
}

void MergedPush::Append(absl::Span<const uint64_t> in_keys,
                        const float* in_grads, const float* in_shows,
                        const float* in_clicks,
                        const std::vector<uint32_t>& positions, uint32_t dim) {
  keys.reserve(keys.size() + positions.size());
  grads.reserve(grads.size() + positions.size() * dim);
  for (uint32_t i : positions) {
    AppendOne(in_keys[i], in_grads + size_t{i} * dim, in_shows[i], in_clicks[i],
              dim);
  }
}

void MergedPush::AppendOne(uint64_t key, const float* grad, float show,
                           float click, uint32_t dim) {
  keys.push_back(key);
  grads.insert(grads.end(), grad, grad + dim);
  shows.push_back(show);
  clicks.push_back(click);
}

void MergedPush::Merge(absl::Span<const uint64_t> in_keys,
                       const float* in_grads, const float* in_shows,
                       const float* in_clicks,
                       const std::vector<uint32_t>& positions, uint32_t dim) {
  // A key appended twice unindexed keeps both entries (the first one takes
  // later merges); the pserver sums them.
  index.Reserve(keys.size() + positions.size());
  for (; indexed < keys.size(); ++indexed) {
    if (index.Find(keys[indexed]) == index.kEmpty) {
      index.Insert(keys[indexed], uint32_t(indexed));
    }
  }
  for (uint32_t i : positions) {
    const uint32_t at = index.Find(in_keys[i]);
    if (at == index.kEmpty) {
      AppendOne(in_keys[i], in_grads + size_t{i} * dim, in_shows[i],
                in_clicks[i], dim);
      index.Insert(in_keys[i], uint32_t(indexed++));
      continue;
    }
    float* merged = &grads[size_t{at} * dim];
    const float* g = in_grads + size_t{i} * dim;
    for (uint32_t f = 0; f < dim; ++f) merged[f] += g[f];
    shows[at] += in_shows[i];
    clicks[at] += in_clicks[i];
  }
}

PushQueue::PushQueue(const PsClientOptions& options, int pserver,
                     Routes* routes, std::atomic<uint64_t>* sequences)
    : options_(options),
      pserver_(pserver),
      routes_(routes),
      sequences_(sequences),
      metrics_(NewPushQueueMetrics(pserver)) {
  sender_ = std::thread([this] {
    SetCurrentThreadName("push-to-ps" + std::to_string(pserver_));
    SenderLoop();
  });
}

PushQueue::~PushQueue() {
  (void)Flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  sender_.join();
}

absl::Status PushQueue::Add(absl::Span<const uint64_t> keys, const float* grads,
                            const float* shows, const float* clicks,
                            const std::vector<uint32_t>& positions) {
  const uint32_t dim = options_.row_dim;
  std::unique_lock<std::mutex> lock(mu_);
  auto has_room = [this] {
    return pending_.size() < options_.max_pending_keys || !error_.ok();
  };
  if (!changed_.wait_for(
          lock, absl::ToChronoNanoseconds(options_.retry_timeout), has_room)) {
    return absl::DeadlineExceededError(
        absl::StrCat("push queue of pserver ", pserver_, " full for ",
                     absl::FormatDuration(options_.retry_timeout)));
  }
  if (!error_.ok()) return error_;
  if (pending_.size() == 0) {
    pending_.oldest = absl::Now();
    pending_.Append(keys, grads, shows, clicks, positions, dim);
  } else {
    pending_.Merge(keys, grads, shows, clicks, positions, dim);
  }
  metrics_.pending_keys->Set(pending_.size());
  lock.unlock();
  changed_.notify_all();
  return absl::OkStatus();
}

absl::Status PushQueue::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  // The sender gives up on a request after retry_timeout, so this ends.
  changed_.wait(lock, [this] {
    return (pending_.size() == 0 && !sending_) || !error_.ok();
  });
  return error_;
}

void PushQueue::AddStats(PsClientStats* stats) const {
  stats->push_retries += retries_.load();
  stats->pushes_sent += sent_.load();
  std::lock_guard<std::mutex> lock(mu_);
  stats->pending_keys += pending_.size();
  absl::Time oldest = absl::InfiniteFuture();
  if (sending_) oldest = sending_since_;
  if (pending_.size() > 0) oldest = std::min(oldest, pending_.oldest);
  if (oldest != absl::InfiniteFuture()) {
    stats->push_lag = std::max(stats->push_lag, absl::Now() - oldest);
  }
}

void PushQueue::SenderLoop() {
  MergedPush batch;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      sending_ = false;
      changed_.notify_all();  // Flush may be waiting for !sending_
      changed_.wait(lock, [this] { return pending_.size() > 0 || stop_; });
      if (pending_.size() == 0) return;  // stopping, nothing left
      batch.Clear();
      batch.Swap(pending_);
      sending_ = true;
      sending_since_ = batch.oldest;
      metrics_.pending_keys->Set(0);
    }
    changed_.notify_all();  // the queue has room again
    metrics_.lag_seconds->Set(
        absl::ToDoubleSeconds(absl::Now() - batch.oldest));
    absl::Status status = SendBatch(batch);
    metrics_.lag_seconds->Set(0);
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (error_.ok()) error_ = status;
    }
  }
}

absl::Status PushQueue::SendBatch(const MergedPush& batch) {
  const size_t dim = options_.row_dim;
  for (size_t begin = 0; begin < batch.size();
       begin += options_.max_keys_per_request) {
    const size_t end =
        std::min(batch.size(), begin + options_.max_keys_per_request);
    ps::PushRequest req;
    req.set_table_id(options_.table_id);
    req.set_writer_id(options_.writer_id);
    req.set_sequence(sequences_->fetch_add(1, std::memory_order_relaxed));
    req.mutable_keys()->Add(batch.keys.begin() + begin,
                            batch.keys.begin() + end);
    req.mutable_shows()->Add(batch.shows.begin() + begin,
                             batch.shows.begin() + end);
    req.mutable_clicks()->Add(batch.clicks.begin() + begin,
                              batch.clicks.begin() + end);
    req.set_grads(reinterpret_cast<const char*>(&batch.grads[begin * dim]),
                  (end - begin) * dim * sizeof(float));
    if (absl::Status s = SendWithRetries(&req); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status PushQueue::SendWithRetries(ps::PushRequest* req) {
  Backoff backoff(options_.initial_backoff, options_.max_backoff,
                  options_.retry_timeout);
  std::shared_ptr<const Routes::Table> routes = routes_->Current();
  while (true) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + options_.deadline));
    ps::PushResponse resp;
    const grpc::Status s = routes->stubs[pserver_]->Push(&context, *req, &resp);
    if (s.ok()) {
      sent_.fetch_add(1, std::memory_order_relaxed);
      metrics_.requests->Increment();
      return absl::OkStatus();
    }
    const std::string where = routes->address(pserver_);
    // The same sequence goes to wherever the newest map says: a pserver
    // applies it once (ps_client.h).
    if (IsTransient(s.error_code())) {
      routes = routes_->Refresh(*routes, s, &context);
    }
    if (!IsTransient(s.error_code()) || !backoff.Wait()) {
      return GrpcToStatus(
          s, absl::StrCat("Push to pserver ", pserver_, " (", where,
                          "), sequence ", req->sequence()));
    }
    retries_.fetch_add(1, std::memory_order_relaxed);
    metrics_.retries->Increment();
  }
}

}  // namespace sampan
