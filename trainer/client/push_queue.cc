#include "trainer/client/push_queue.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/hash.h"
#include "common/retry.h"
#include "common/thread_priority.h"

namespace sampan {

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
      table_(std::move(table)),
      probe_backoff_(options.initial_backoff) {
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
    return pending_.size() + held_rows_.size() < options_.max_pending_keys ||
           !error_.ok();
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
  changed_.wait(lock, [this] {
    return (!HasWorkLocked() && !HoldsLocked() && !sending_) || !error_.ok();
  });
  return error_;
}

void PushQueue::AddStats(PsClientStats* stats) const {
  stats->push_retries += retries_.load();
  stats->pushes_sent += sent_.load();
  std::lock_guard<std::mutex> lock(mu_);
  stats->pending_keys += pending_.size() + held_rows_.size();
  absl::Time oldest = absl::InfiniteFuture();
  if (sending_) oldest = sending_since_;
  if (pending_.size() > 0) oldest = std::min(oldest, pending_.oldest);
  if (held_rows_.size() > 0) oldest = std::min(oldest, held_rows_.oldest);
  for (const OwedPush& o : owed_) oldest = std::min(oldest, o.since);
  for (const OwedPush& o : held_owed_) oldest = std::min(oldest, o.since);
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
  // The router sorts what it takes by sequence.
  std::deque<OwedPush> held;
  ReleaseHeldLocked(&held);
  for (OwedPush& o : held) owed->push_back(std::move(o));
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

bool PushQueue::ProbeDueLocked() const {
  return !held_owed_.empty() && absl::Now() >= next_probe_;
}

void PushQueue::ReleaseHeldLocked(std::deque<OwedPush>* owed) {
  // owed_ is empty or holds requests sequenced after the held parts (the
  // router's resends come only with held work taken).
  std::deque<OwedPush> all;
  all.swap(held_owed_);
  for (OwedPush& o : owed_) all.push_back(std::move(o));
  owed_.clear();
  std::stable_sort(all.begin(), all.end(),
                   [](const OwedPush& a, const OwedPush& b) {
                     return a.request.sequence() < b.request.sequence();
                   });
  for (OwedPush& o : all) owed->push_back(std::move(o));
  if (held_rows_.size() > 0) {
    std::vector<uint32_t> all_rows(held_rows_.size());
    for (size_t i = 0; i < all_rows.size(); ++i) all_rows[i] = uint32_t(i);
    MergeLocked(held_rows_.keys, held_rows_.grads.data(),
                held_rows_.shows.data(), held_rows_.clicks.data(), all_rows,
                held_rows_.oldest);
    held_rows_.Clear();
  }
  held_.clear();  // empty while nothing is held: senders skip the check
}

std::vector<uint8_t> PushQueue::HeldShards() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

absl::Status PushQueue::Hold(ps::PushRequest part, absl::Time since,
                             absl::Span<const uint32_t> shards) {
  const absl::Time now = absl::Now();
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t s : shards) {
    if (s >= held_.size()) held_.resize(s + 1, 0);
    held_[s] = 1;
  }
  if (held_owed_.empty()) {
    if (held_since_ == absl::InfiniteFuture()) held_since_ = now;
    next_probe_ = now + probe_backoff_;
  }
  if (now - held_since_ > options_.retry_timeout) {
    const uint32_t num_shards = table_->map.num_shards();
    return absl::DeadlineExceededError(absl::StrCat(
        "Push to pserver ", pserver_, ": shard ",
        part.keys_size() > 0 ? ShardOf(part.keys(0), num_shards) : 0,
        " has been frozen for a move for longer than the retry timeout (",
        absl::FormatDuration(options_.retry_timeout), "), sequence ",
        part.sequence()));
  }
  auto at =
      std::upper_bound(held_owed_.begin(), held_owed_.end(), part.sequence(),
                       [](uint64_t seq, const OwedPush& o) {
                         return seq < o.request.sequence();
                       });
  held_owed_.insert(at, OwedPush{std::move(part), since});
  return absl::OkStatus();
}

void PushQueue::HoldRows(const MergedPush& batch,
                         const std::vector<uint32_t>& positions) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t dim = options_.row_dim;
  if (held_rows_.size() == 0) {
    held_rows_.oldest = batch.oldest;
    held_rows_.Append(batch.keys, batch.grads.data(), batch.shows.data(),
                      batch.clicks.data(), positions, dim);
  } else {
    held_rows_.oldest = std::min(held_rows_.oldest, batch.oldest);
    held_rows_.Merge(batch.keys, batch.grads.data(), batch.shows.data(),
                     batch.clicks.data(), positions, dim);
  }
}

void PushQueue::SenderLoop() {
  MergedPush batch;
  std::deque<OwedPush> owed;
  while (true) {
    std::shared_ptr<const Routes::Table> table;
    absl::Time since;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!HoldsLocked()) {
        held_since_ = absl::InfiniteFuture();
        probe_backoff_ = options_.initial_backoff;
      }
      sending_ = false;
      changed_.notify_all();  // Flush may be waiting for !sending_
      while (!HasWorkLocked() && !park_ && !stop_) {
        if (held_owed_.empty()) {
          changed_.wait(lock);
        } else {
          changed_.wait_until(lock, absl::ToChronoTime(next_probe_));
        }
      }
      if (park_ && !stop_) {
        parked_ = true;
        changed_.notify_all();
        // The router holds a parked queue for about one request deadline.
        changed_.wait(lock, [this] { return !park_ || stop_; });
        parked_ = false;
        continue;
      }
      if (!HasWorkLocked()) return;  // stopping, nothing left
      if (ProbeDueLocked()) {
        // Everything held goes out again, in order; what is still frozen
        // is held again, a probe later.
        retries_.fetch_add(held_owed_.size(), std::memory_order_relaxed);
        metrics_.retries->Increment(held_owed_.size());
        ReleaseHeldLocked(&owed);
        probe_backoff_ = std::min(2 * probe_backoff_, options_.max_backoff);
      } else {
        owed.swap(owed_);
      }
      batch.Clear();
      batch.Swap(pending_);
      metrics_.pending_keys->Set(0);
      sending_since_ = batch.size() > 0 ? batch.oldest : absl::InfiniteFuture();
      if (!owed.empty()) {
        sending_since_ = std::min(sending_since_, owed.front().since);
      }
      sending_ = true;
      since = sending_since_;
      table = table_;
    }
    changed_.notify_all();  // the queue has room again
    metrics_.lag_seconds->Set(since == absl::InfiniteFuture()
                                  ? 0
                                  : absl::ToDoubleSeconds(absl::Now() - since));
    bool parked = false;
    absl::Status status = SendOwed(&owed, &table, &parked);
    if (parked) {
      HandBack(nullptr, &batch, 0);
    } else if (status.ok()) {
      status = SendBatch(batch, &table, &parked);
    }
    metrics_.lag_seconds->Set(0);
    std::lock_guard<std::mutex> lock(mu_);
    if (!park_) table_ = table;  // a newer address, same routing
    if (!status.ok() && error_.ok()) error_ = status;
  }
}

absl::Status PushQueue::SendBatch(const MergedPush& batch,
                                  std::shared_ptr<const Routes::Table>* table,
                                  bool* parked) {
  const size_t dim = options_.row_dim;
  const uint32_t num_shards = (*table)->map.num_shards();
  std::vector<uint32_t> rows, hold;
  for (size_t next = 0; next < batch.size();) {
    if (next > 0 && ParkRequested()) {
      HandBack(nullptr, &batch, next);
      *parked = true;
      return absl::OkStatus();
    }
    const std::vector<uint8_t> held = HeldShards();
    rows.clear();
    hold.clear();
    if (held.empty()) {  // the common case: no shard's hash looked up
      const size_t end =
          std::min(batch.size(), next + options_.max_keys_per_request);
      for (; next < end; ++next) rows.push_back(next);
    }
    for (; next < batch.size() && rows.size() < options_.max_keys_per_request;
         ++next) {
      const uint32_t shard = ShardOf(batch.keys[next], num_shards);
      (shard < held.size() && held[shard] ? hold : rows).push_back(next);
    }
    if (!hold.empty()) HoldRows(batch, hold);
    if (rows.empty()) continue;
    OwedPush push;
    push.since = batch.oldest;
    ps::PushRequest& req = push.request;
    req.set_table_id(options_.table_id);
    req.set_writer_id(options_.writer_id);
    req.set_sequence(sequences_->fetch_add(1, std::memory_order_relaxed));
    req.set_partial_ok(true);
    if (hold.empty()) {  // nothing held: the rows are one run
      const size_t begin = rows.front(), end = rows.back() + 1;
      req.mutable_keys()->Add(batch.keys.begin() + begin,
                              batch.keys.begin() + end);
      req.mutable_shows()->Add(batch.shows.begin() + begin,
                               batch.shows.begin() + end);
      req.mutable_clicks()->Add(batch.clicks.begin() + begin,
                                batch.clicks.begin() + end);
      req.set_grads(reinterpret_cast<const char*>(&batch.grads[begin * dim]),
                    (end - begin) * dim * sizeof(float));
    } else {
      std::string* grads = req.mutable_grads();
      grads->reserve(rows.size() * dim * sizeof(float));
      for (uint32_t i : rows) {
        req.add_keys(batch.keys[i]);
        req.add_shows(batch.shows[i]);
        req.add_clicks(batch.clicks[i]);
        grads->append(reinterpret_cast<const char*>(&batch.grads[i * dim]),
                      dim * sizeof(float));
      }
    }
    absl::Status error;
    switch (Send(req, table, &error)) {
      case Sent::kAcked:
        break;
      case Sent::kFailed:
        return error;
      case Sent::kParked: {
        std::deque<OwedPush> rest;
        rest.push_back(std::move(push));
        HandBack(&rest, &batch, next);
        *parked = true;
        return absl::OkStatus();
      }
    }
  }
  return absl::OkStatus();
}

absl::Status PushQueue::SendOwed(std::deque<OwedPush>* owed,
                                 std::shared_ptr<const Routes::Table>* table,
                                 bool* parked) {
  const uint32_t num_shards = (*table)->map.num_shards();
  while (!owed->empty()) {
    if (ParkRequested()) {
      HandBack(owed, nullptr, 0);
      *parked = true;
      return absl::OkStatus();
    }
    OwedPush& front = owed->front();
    front.request.set_partial_ok(true);
    // The part of held shards waits behind their earlier held parts.
    const std::vector<uint8_t> held = HeldShards();
    const auto is_held = [&](uint64_t key) -> uint32_t {
      const uint32_t shard = ShardOf(key, num_shards);
      return shard < held.size() && held[shard] ? 1 : 0;
    };
    bool any_held = false;
    if (!held.empty()) {
      for (uint64_t key : front.request.keys()) any_held |= is_held(key) != 0;
    }
    if (any_held) {
      ps::PushRequest free;
      for (auto& [group, piece] :
           SplitPush(front.request, options_.row_dim, 2, is_held)) {
        if (group == 0) {
          free = std::move(piece);
          continue;
        }
        if (absl::Status st = Hold(std::move(piece), front.since, {});
            !st.ok()) {
          owed->clear();
          return st;
        }
      }
      front.request = std::move(free);
      if (front.request.keys_size() == 0) {
        owed->pop_front();
        continue;
      }
    }
    absl::Status error;
    const Sent sent = Send(front.request, table, &error);
    if (sent == Sent::kFailed) {
      owed->clear();
      return error;
    }
    if (sent == Sent::kParked) {
      HandBack(owed, nullptr, 0);
      *parked = true;
      return absl::OkStatus();
    }
    owed->pop_front();
  }
  return absl::OkStatus();
}

PushQueue::Sent PushQueue::Send(const ps::PushRequest& request,
                                std::shared_ptr<const Routes::Table>* table,
                                absl::Status* error) {
  std::vector<uint32_t> moving;
  const Sent sent = SendWithRetries(request, table, error, &moving);
  if (sent != Sent::kAcked || moving.empty()) return sent;
  const uint32_t num_shards = (*table)->map.num_shards();
  for (auto& [group, piece] :
       SplitPush(request, options_.row_dim, 2, [&](uint64_t key) -> uint32_t {
         return std::binary_search(moving.begin(), moving.end(),
                                   ShardOf(key, num_shards))
                    ? 1
                    : 0;
       })) {
    if (group == 0) continue;  // applied
    if (absl::Status st = Hold(std::move(piece), absl::Now(), moving);
        !st.ok()) {
      *error = st;
      return Sent::kFailed;
    }
  }
  return Sent::kAcked;
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
    absl::Status* error, std::vector<uint32_t>* moving) {
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
      moving->assign(resp.moving_shards().begin(), resp.moving_shards().end());
      std::sort(moving->begin(), moving->end());
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
