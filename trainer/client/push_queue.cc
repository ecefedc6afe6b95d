#include "trainer/client/push_queue.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/retry.h"
#include "common/thread_priority.h"

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
                     Routes* routes, std::atomic<uint64_t>* sequences,
                     std::function<void()> reroute,
                     std::shared_ptr<const Routes::Table> table)
    : options_(options),
      pserver_(pserver),
      routes_(routes),
      sequences_(sequences),
      reroute_(std::move(reroute)),
      metrics_(NewPushQueueMetrics(pserver)),
      table_(std::move(table)) {
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

void PushQueue::MergeLocked(absl::Span<const uint64_t> keys, const float* grads,
                            const float* shows, const float* clicks,
                            const std::vector<uint32_t>& positions,
                            absl::Time oldest) {
  const uint32_t dim = options_.row_dim;
  if (pending_.size() == 0) {
    pending_.oldest = oldest;
    pending_.Append(keys, grads, shows, clicks, positions, dim);
  } else {
    pending_.oldest = std::min(pending_.oldest, oldest);
    pending_.Merge(keys, grads, shows, clicks, positions, dim);
  }
  metrics_.pending_keys->Set(pending_.size());
}

absl::Status PushQueue::Add(absl::Span<const uint64_t> keys, const float* grads,
                            const float* shows, const float* clicks,
                            const std::vector<uint32_t>& positions) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
    MergeLocked(keys, grads, shows, clicks, positions, absl::Now());
  }
  changed_.notify_all();
  return absl::OkStatus();
}

absl::Status PushQueue::WaitForRoom(absl::Time give_up) {
  std::unique_lock<std::mutex> lock(mu_);
  auto has_room = [this] {
    return pending_.size() < options_.max_pending_keys || !error_.ok();
  };
  if (!changed_.wait_until(lock, absl::ToChronoTime(give_up), has_room)) {
    return absl::DeadlineExceededError(
        absl::StrCat("push queue of pserver ", pserver_, " full for ",
                     absl::FormatDuration(options_.retry_timeout)));
  }
  return error_;
}

absl::Status PushQueue::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  // The sender gives up on a request after retry_timeout, and the router
  // resumes a parked queue within a deadline or so, so this ends.
  changed_.wait(
      lock, [this] { return (!HasWorkLocked() && !sending_) || !error_.ok(); });
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
  for (const OwedPush& o : owed_) oldest = std::min(oldest, o.since);
  if (oldest != absl::InfiniteFuture()) {
    stats->push_lag = std::max(stats->push_lag, absl::Now() - oldest);
  }
}

void PushQueue::Park() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    park_ = true;
  }
  changed_.notify_all();
}

bool PushQueue::WaitParked(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                           [this] { return parked_; });
}

void PushQueue::TakeWork(std::vector<OwedPush>* owed, MergedPush* pending) {
  std::lock_guard<std::mutex> lock(mu_);
  for (OwedPush& o : owed_) owed->push_back(std::move(o));
  owed_.clear();
  pending->Swap(pending_);
  metrics_.pending_keys->Set(0);
}

void PushQueue::Resend(OwedPush owed) {
  std::lock_guard<std::mutex> lock(mu_);
  owed_.push_back(std::move(owed));
}

void PushQueue::Requeue(const MergedPush& rows,
                        const std::vector<uint32_t>& positions) {
  std::lock_guard<std::mutex> lock(mu_);
  MergeLocked(rows.keys, rows.grads.data(), rows.shows.data(),
              rows.clicks.data(), positions, rows.oldest);
}

void PushQueue::Resume(std::shared_ptr<const Routes::Table> table) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    table_ = std::move(table);
    park_ = false;
  }
  changed_.notify_all();
}

bool PushQueue::ParkRequested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return park_;
}

void PushQueue::SenderLoop() {
  MergedPush batch;
  std::deque<OwedPush> owed;
  while (true) {
    std::shared_ptr<const Routes::Table> table;
    absl::Time since;
    {
      std::unique_lock<std::mutex> lock(mu_);
      sending_ = false;
      changed_.notify_all();  // Flush may be waiting for !sending_
      changed_.wait(lock, [this] { return HasWorkLocked() || park_ || stop_; });
      if (park_ && !stop_) {
        parked_ = true;
        changed_.notify_all();
        // The router holds a parked queue for about one request deadline.
        changed_.wait(lock, [this] { return !park_ || stop_; });
        parked_ = false;
        continue;
      }
      if (!HasWorkLocked()) return;  // stopping, nothing left
      if (!owed_.empty()) {
        owed.swap(owed_);
        sending_since_ = owed.front().since;
      } else {
        batch.Clear();
        batch.Swap(pending_);
        sending_since_ = batch.oldest;
        metrics_.pending_keys->Set(0);
      }
      sending_ = true;
      since = sending_since_;
      table = table_;
    }
    changed_.notify_all();  // the queue has room again
    metrics_.lag_seconds->Set(absl::ToDoubleSeconds(absl::Now() - since));
    absl::Status status =
        owed.empty() ? SendBatch(batch, &table) : SendOwed(&owed, &table);
    metrics_.lag_seconds->Set(0);
    std::lock_guard<std::mutex> lock(mu_);
    if (!park_) table_ = table;  // a newer address, same routing
    if (!status.ok() && error_.ok()) error_ = status;
  }
}

absl::Status PushQueue::SendBatch(const MergedPush& batch,
                                  std::shared_ptr<const Routes::Table>* table) {
  const size_t dim = options_.row_dim;
  for (size_t begin = 0; begin < batch.size();
       begin += options_.max_keys_per_request) {
    if (begin > 0 && ParkRequested()) {
      HandBack(nullptr, &batch, begin);
      return absl::OkStatus();
    }
    const size_t end =
        std::min(batch.size(), begin + options_.max_keys_per_request);
    OwedPush push;
    push.since = batch.oldest;
    ps::PushRequest& req = push.request;
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
    absl::Status error;
    switch (SendWithRetries(req, table, &error)) {
      case Sent::kAcked:
        break;
      case Sent::kFailed:
        return error;
      case Sent::kParked: {
        std::deque<OwedPush> rest;
        rest.push_back(std::move(push));
        HandBack(&rest, &batch, end);
        return absl::OkStatus();
      }
    }
  }
  return absl::OkStatus();
}

absl::Status PushQueue::SendOwed(std::deque<OwedPush>* owed,
                                 std::shared_ptr<const Routes::Table>* table) {
  while (!owed->empty()) {
    absl::Status error;
    Sent sent = ParkRequested()
                    ? Sent::kParked
                    : SendWithRetries(owed->front().request, table, &error);
    if (sent == Sent::kFailed) {
      owed->clear();
      return error;
    }
    if (sent == Sent::kParked) {
      HandBack(owed, nullptr, 0);
      return absl::OkStatus();
    }
    owed->pop_front();
  }
  return absl::OkStatus();
}

void PushQueue::HandBack(std::deque<OwedPush>* owed, const MergedPush* batch,
                         size_t from) {
  std::lock_guard<std::mutex> lock(mu_);
  if (owed != nullptr) {
    // The sender took every owed request, so nothing older is left here.
    for (OwedPush& o : owed_) owed->push_back(std::move(o));
    owed_.swap(*owed);
    owed->clear();
  }
  if (batch != nullptr && from < batch->size()) {
    std::vector<uint32_t> rest(batch->size() - from);
    for (size_t i = 0; i < rest.size(); ++i) rest[i] = uint32_t(from + i);
    MergeLocked(batch->keys, batch->grads.data(), batch->shows.data(),
                batch->clicks.data(), rest, batch->oldest);
  }
}

PushQueue::Sent PushQueue::SendWithRetries(
    const ps::PushRequest& req, std::shared_ptr<const Routes::Table>* table,
    absl::Status* error) {
  Backoff backoff(options_.initial_backoff, options_.max_backoff,
                  options_.retry_timeout);
  while (true) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + options_.deadline));
    ps::PushResponse resp;
    const grpc::Status s =
        (*table)->stubs[pserver_]->Push(&context, req, &resp);
    if (s.ok()) {
      sent_.fetch_add(1, std::memory_order_relaxed);
      metrics_.requests->Increment();
      return Sent::kAcked;
    }
    const std::string where = (*table)->address(pserver_);
    absl::Duration sleep;
    if (!IsTransient(s.error_code()) || !backoff.Next(&sleep)) {
      *error =
          GrpcToStatus(s, absl::StrCat("Push to pserver ", pserver_, " (",
                                       where, "), sequence ", req.sequence()));
      return Sent::kFailed;
    }
    // The same sequence goes to wherever the newest map says: a pserver
    // applies it once (ps_client.h). Routes that send keys elsewhere are
    // the router's to install, with every queue parked (push_router.h).
    std::shared_ptr<const Routes::Table> next =
        routes_->Refresh(**table, s, &context);
    if (SameRouting(next->map, (*table)->map)) {
      *table = std::move(next);
    } else {
      reroute_();
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (changed_.wait_for(lock, absl::ToChronoNanoseconds(sleep),
                            [this] { return park_; })) {
        return Sent::kParked;
      }
    }
    retries_.fetch_add(1, std::memory_order_relaxed);
    metrics_.retries->Increment();
  }
}

}  // namespace sampan
