#include "trainer/client/push_router.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/thread_priority.h"

namespace sampan {

void RoutingEpoch::LockShared() {
  std::unique_lock<std::mutex> lock(mu_);
  // Waits at most for one reroute (a request deadline or so).
  cv_.wait(lock, [this] { return !exclusive_ && waiting_ == 0; });
  ++shared_;
}

void RoutingEpoch::UnlockShared() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--shared_ == 0) cv_.notify_all();
}

void RoutingEpoch::Lock() {
  std::unique_lock<std::mutex> lock(mu_);
  ++waiting_;
  // Shared holders only split keys and merge them: microseconds.
  cv_.wait(lock, [this] { return !exclusive_ && shared_ == 0; });
  --waiting_;
  exclusive_ = true;
}

void RoutingEpoch::Unlock() {
  std::lock_guard<std::mutex> lock(mu_);
  exclusive_ = false;
  cv_.notify_all();
}

namespace {

class SharedEpoch {
 public:
  explicit SharedEpoch(RoutingEpoch* epoch) : epoch_(epoch) {
    epoch_->LockShared();
  }
  ~SharedEpoch() { epoch_->UnlockShared(); }

 private:
  RoutingEpoch* const epoch_;
};

// Positions of `keys` grouped by their owner in `map`.
std::vector<std::vector<uint32_t>> GroupByOwner(
    const ShardMap& map, absl::Span<const uint64_t> keys) {
  std::vector<std::vector<uint32_t>> positions(map.num_pservers());
  for (uint32_t i = 0; i < keys.size(); ++i) {
    positions[map.OwnerOfKey(keys[i])].push_back(i);
  }
  return positions;
}

}  // namespace

std::vector<std::pair<uint32_t, ps::PushRequest>> SplitByOwner(
    const ps::PushRequest& request, const ShardMap& map, uint32_t row_dim) {
  return SplitPush(request, row_dim, map.num_pservers(),
                   [&](uint64_t key) { return map.OwnerOfKey(key); });
}

PushRouter::PushRouter(const PsClientOptions& options, Routes* routes)
    : options_(options), routes_(routes), table_(routes->Current()) {
  for (size_t p = 0; p < table_->map.num_pservers(); ++p) {
    queues_.push_back(NewQueue(p, table_));
  }
  rerouter_ = std::thread([this] {
    SetCurrentThreadName("push-reroute");
    RerouteLoop();
  });
}

PushRouter::~PushRouter() {
  (void)Flush();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  rerouter_.join();
  queues_.clear();  // each flushes (nothing left) and stops its sender
}

std::unique_ptr<PushQueue> PushRouter::NewQueue(
    int pserver, std::shared_ptr<const Routes::Table> table) {
  return std::make_unique<PushQueue>(
      options_, pserver, routes_, &sequences_, [this] { RequestReroute(); },
      std::move(table));
}

std::vector<PushQueue*> PushRouter::Queues() const {
  std::lock_guard<std::mutex> lock(queues_mu_);
  std::vector<PushQueue*> queues;
  for (const auto& q : queues_) queues.push_back(q.get());
  return queues;
}

absl::Status PushRouter::Push(absl::Span<const uint64_t> keys,
                              absl::Span<const float> grads,
                              absl::Span<const float> shows,
                              absl::Span<const float> clicks) {
  std::vector<PushQueue*> used;
  {
    SharedEpoch epoch(&epoch_);
    std::vector<std::vector<uint32_t>> by_pserver =
        GroupByOwner(table_->map, keys);
    for (size_t p = 0; p < by_pserver.size(); ++p) {
      if (by_pserver[p].empty()) continue;
      absl::Status s = queues_[p]->Add(keys, grads.data(), shows.data(),
                                       clicks.data(), by_pserver[p]);
      if (!s.ok()) return s;
      used.push_back(queues_[p].get());
    }
  }
  // Queues are never destroyed before the router, so `used` stays valid.
  const absl::Time give_up = absl::Now() + options_.retry_timeout;
  for (PushQueue* queue : used) {
    if (absl::Status s = queue->WaitForRoom(give_up); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status PushRouter::Flush() {
  while (true) {
    uint64_t generation;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // A reroute parks senders for about one deadline.
      const bool quiet = cv_.wait_for(
          lock,
          absl::ToChronoNanoseconds(options_.retry_timeout + options_.deadline),
          [this] { return generation_ % 2 == 0; });
      if (!quiet) {
        return absl::DeadlineExceededError(absl::StrCat(
            "Flush: rerouting pushes took more than ",
            absl::FormatDuration(options_.retry_timeout + options_.deadline)));
      }
      generation = generation_;
    }
    absl::Status first;
    for (PushQueue* queue : Queues()) {
      absl::Status s = queue->Flush();
      if (first.ok()) first = s;
    }
    if (!first.ok()) return first;
    // A reroute meanwhile may have moved rows into a queue already seen.
    std::lock_guard<std::mutex> lock(mu_);
    if (generation_ == generation) return absl::OkStatus();
  }
}

void PushRouter::AddStats(PsClientStats* stats) const {
  for (PushQueue* queue : Queues()) queue->AddStats(stats);
}

void PushRouter::RequestReroute() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reroute_wanted_ = true;
  }
  cv_.notify_all();
}

void PushRouter::RerouteLoop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return reroute_wanted_ || stop_; });
      if (stop_) return;
      reroute_wanted_ = false;
    }
    Reroute();
  }
}

void PushRouter::Reroute() {
  epoch_.Lock();
  std::shared_ptr<const Routes::Table> next = routes_->Current();
  if (SameRouting(next->map, table_->map)) {
    epoch_.Unlock();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
  }
  const absl::Time start = absl::Now();
  for (auto& queue : queues_) queue->Park();
  for (size_t p = 0; p < queues_.size(); ++p) {
    // A sender reaches a safe point within one request deadline.
    while (!queues_[p]->WaitParked(options_.deadline)) {
      SAMPAN_LOG(WARNING) << "rerouting pushes: still waiting for the sender "
                             "to pserver "
                          << p << " to stop";
    }
  }
  std::vector<OwedPush> owed;
  std::vector<MergedPush> pending(queues_.size());
  for (size_t p = 0; p < queues_.size(); ++p) {
    queues_[p]->TakeWork(&owed, &pending[p]);
  }
  while (queues_.size() < next->map.num_pservers()) {
    std::unique_ptr<PushQueue> queue = NewQueue(queues_.size(), next);
    queue->Park();  // until every queue resumes together
    while (!queue->WaitParked(options_.deadline)) {
    }
    std::lock_guard<std::mutex> lock(queues_mu_);
    queues_.push_back(std::move(queue));
  }
  const size_t resent = owed.size();
  Redistribute(next->map, std::move(owed), std::move(pending));
  table_ = next;
  for (auto& queue : queues_) queue->Resume(next);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++generation_;
  }
  cv_.notify_all();
  epoch_.Unlock();
  SAMPAN_LOG(INFO) << "pushes rerouted by shard map version "
                   << next->map.version << " (" << next->map.num_pservers()
                   << " pservers): " << resent
                   << " unacknowledged requests resent with their sequences, "
                      "in "
                   << absl::FormatDuration(absl::Now() - start);
}

void PushRouter::Redistribute(const ShardMap& next, std::vector<OwedPush> owed,
                              std::vector<MergedPush> pending) {
  // Sequences are unique per writer, so this order is each shard's.
  std::sort(owed.begin(), owed.end(), [](const OwedPush& a, const OwedPush& b) {
    return a.request.sequence() < b.request.sequence();
  });
  for (const OwedPush& o : owed) {
    for (auto& [owner, piece] :
         SplitByOwner(o.request, next, options_.row_dim)) {
      queues_[owner]->Resend(OwedPush{std::move(piece), o.since});
    }
  }
  for (const MergedPush& rows : pending) {
    if (rows.size() == 0) continue;
    std::vector<std::vector<uint32_t>> by_owner = GroupByOwner(next, rows.keys);
    for (size_t p = 0; p < by_owner.size(); ++p) {
      if (!by_owner[p].empty()) queues_[p]->Requeue(rows, by_owner[p]);
    }
  }
}

}  // namespace sampan
