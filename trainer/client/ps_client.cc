#include "trainer/client/ps_client.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/hash.h"
#include "common/ps_wire.h"
#include "common/retry.h"
#include "proto/ps.grpc.pb.h"
#include "trainer/client/client_metrics.h"
#include "trainer/client/push_router.h"
#include "trainer/client/routes.h"

namespace sampan {
namespace {

// One pull request: a slice of one pserver's keys.
struct PullCall {
  int pserver = 0;
  std::vector<uint32_t> positions;  // where the rows go in the caller's out
  ps::PullRequest request;
  // Per attempt:
  std::unique_ptr<grpc::ClientContext> context;
  grpc::ByteBuffer response;  // a serialized ps::PullResponse
  grpc::Status status;
  bool done = false;
};

class GrpcPsClient final : public PsClient {
 public:
  explicit GrpcPsClient(const PsClientOptions& options)
      : options_(options), routes_(options_), pushes_(options_, &routes_) {}

  absl::Status Pull(absl::Span<const uint64_t> keys, bool is_training,
                    float* out) override {
    const absl::Time start = absl::Now();
    struct ObserveOnExit {
      absl::Time start;
      PullMetrics metrics;
      ~ObserveOnExit() {
        metrics.duration->Observe(absl::ToDoubleSeconds(absl::Now() - start));
      }
    } observe{start, pull_metrics_};
    std::shared_ptr<const Routes::Table> routes = routes_.Current();
    std::vector<PullCall> calls;
    std::vector<uint32_t> all(keys.size());
    for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
    PlanPulls(routes->map, keys, all, is_training, &calls);
    Backoff backoff(options_.initial_backoff, options_.max_backoff,
                    options_.retry_timeout);
    while (true) {
      RunPullAttempt(*routes, &calls);
      absl::Status failure;
      bool retry = false;
      const PullCall* failed = nullptr;
      for (PullCall& call : calls) {
        if (call.done) continue;
        if (call.status.ok()) {
          absl::Status scattered = ScatterRows(call, out);
          call.done = scattered.ok();
          if (call.done) continue;
          failure = scattered;
          retry = false;
          break;
        }
        failure = PullError(*routes, call);
        failed = &call;
        retry = IsTransient(call.status.error_code());
        if (!retry) break;
      }
      if (failure.ok()) return absl::OkStatus();
      if (!retry) return failure;
      // The map may be stale; a newer one that moved shards re-plans the
      // keys not read yet (the rows read stay where they were scattered).
      std::shared_ptr<const Routes::Table> next =
          routes_.Refresh(*routes, failed->status, failed->context.get());
      if (!SameRouting(next->map, routes->map)) {
        Replan(next->map, keys, is_training, &calls);
      }
      routes = std::move(next);
      if (!backoff.Wait()) return failure;
      pull_retries_.fetch_add(1, std::memory_order_relaxed);
      pull_metrics_.retries->Increment();
    }
  }

  absl::Status PushAsync(absl::Span<const uint64_t> keys,
                         absl::Span<const float> grads,
                         absl::Span<const float> shows,
                         absl::Span<const float> clicks) override {
    return pushes_.Push(keys, grads, shows, clicks);
  }

  absl::Status Flush() override { return pushes_.Flush(); }

  absl::StatusOr<ShrinkTotals> Shrink(absl::Duration deadline) override {
    ps::ShrinkRequest request;
    request.set_table_id(options_.table_id);
    // Every pserver of the coordinator's current map, not only those this
    // client has met.
    std::shared_ptr<const Routes::Table> routes = routes_.Latest();
    std::vector<ShrinkCall> calls(routes->stubs.size());
    ShrinkTotals totals;
    Backoff backoff(options_.initial_backoff, options_.max_backoff,
                    options_.retry_timeout);
    while (true) {
      RunShrinkAttempt(*routes, request, deadline, &calls);
      absl::Status failure;
      bool retry = true;
      const ShrinkCall* failed = nullptr;
      for (size_t p = 0; p < calls.size(); ++p) {
        ShrinkCall& call = calls[p];
        if (call.done) continue;
        call.done = call.status.ok();
        if (call.done) {
          totals.deleted_rows += call.response.deleted_rows();
          totals.rows += call.response.rows();
          continue;
        }
        const bool again = IsRefusedOrUnreached(call.status.error_code());
        // A failure that will not be retried is the one to report.
        if (failure.ok() || (retry && !again)) {
          failure = GrpcToStatus(call.status,
                                 absl::StrCat("Shrink on pserver ", p, " (",
                                              routes->address(p), ")"));
        }
        failed = &call;
        retry = retry && again;
      }
      if (failure.ok()) break;
      if (!retry) return failure;
      routes = routes_.Refresh(*routes, failed->status, failed->context.get());
      // Every pserver of the current map: one that joined is asked too, one
      // that left has no rows (its shards moved away).
      calls.resize(routes->stubs.size());
      if (!backoff.Wait()) return failure;
    }
    return totals;
  }

  PsClientStats Stats() const override {
    PsClientStats stats;
    stats.pull_retries = pull_retries_.load();
    stats.map_refreshes = routes_.refreshes();
    pushes_.AddStats(&stats);
    return stats;
  }

 private:
  static std::vector<std::vector<uint32_t>> GroupByPserver(
      const ShardMap& map, absl::Span<const uint64_t> keys,
      absl::Span<const uint32_t> positions) {
    std::vector<std::vector<uint32_t>> by_pserver(map.num_pservers());
    for (uint32_t i : positions) {
      by_pserver[map.OwnerOfKey(keys[i])].push_back(i);
    }
    return by_pserver;
  }

  // Appends to *calls the pulls of keys[positions] by `map`.
  void PlanPulls(const ShardMap& map, absl::Span<const uint64_t> keys,
                 absl::Span<const uint32_t> positions, bool is_training,
                 std::vector<PullCall>* calls) const {
    std::vector<std::vector<uint32_t>> by_pserver =
        GroupByPserver(map, keys, positions);
    for (size_t p = 0; p < by_pserver.size(); ++p) {
      const std::vector<uint32_t>& pos = by_pserver[p];
      for (size_t b = 0; b < pos.size(); b += options_.max_keys_per_request) {
        const size_t e =
            std::min(pos.size(), b + options_.max_keys_per_request);
        PullCall& call = calls->emplace_back();
        call.pserver = p;
        call.positions.assign(pos.begin() + b, pos.begin() + e);
        call.request.set_table_id(options_.table_id);
        call.request.set_is_training(is_training);
        call.request.set_compact_values(true);  // ScatterPullResponse decodes
        call.request.mutable_keys()->Reserve(e - b);
        for (uint32_t i : call.positions) call.request.add_keys(keys[i]);
      }
    }
  }

  // Replaces the calls not done by calls planned by `map` for their keys.
  void Replan(const ShardMap& map, absl::Span<const uint64_t> keys,
              bool is_training, std::vector<PullCall>* calls) const {
    std::vector<uint32_t> left;
    std::vector<PullCall> done;
    for (PullCall& call : *calls) {
      if (call.done) {
        done.push_back(std::move(call));
      } else {
        left.insert(left.end(), call.positions.begin(), call.positions.end());
      }
    }
    *calls = std::move(done);
    PlanPulls(map, keys, left, is_training, calls);
  }

  // Sends every call not yet done, in parallel, and waits for all of them.
  void RunPullAttempt(const Routes::Table& routes,
                      std::vector<PullCall>* calls) {
    grpc::CompletionQueue cq;
    int outstanding = 0;
    for (PullCall& call : *calls) {
      if (call.done) continue;
      call.context = std::make_unique<grpc::ClientContext>();
      call.context->set_deadline(
          absl::ToChronoTime(absl::Now() + options_.deadline));
      call.response.Clear();
      auto reader = routes.pull_stubs[call.pserver]->PrepareUnaryCall(
          call.context.get(), kPullMethod, call.request, &cq);
      reader->StartCall();
      reader->Finish(&call.response, &call.status, &call);
      ++outstanding;
    }
    void* tag;
    bool ok;
    // Every call has a deadline, so each completes.
    for (; outstanding > 0 && cq.Next(&tag, &ok); --outstanding) {
    }
  }

  struct ShrinkCall {
    std::unique_ptr<grpc::ClientContext> context;
    ps::ShrinkResponse response;
    grpc::Status status;
    bool done = false;
  };

  // Sends `request` to every pserver whose call is not done, in parallel,
  // and waits for all of them.
  void RunShrinkAttempt(const Routes::Table& routes,
                        const ps::ShrinkRequest& request,
                        absl::Duration deadline,
                        std::vector<ShrinkCall>* calls) {
    grpc::CompletionQueue cq;
    int outstanding = 0;
    for (size_t p = 0; p < calls->size(); ++p) {
      ShrinkCall& call = (*calls)[p];
      if (call.done) continue;
      call.context = std::make_unique<grpc::ClientContext>();
      call.context->set_deadline(absl::ToChronoTime(absl::Now() + deadline));
      routes.stubs[p]
          ->AsyncShrink(call.context.get(), request, &cq)
          ->Finish(&call.response, &call.status, &call);
      ++outstanding;
    }
    void* tag;
    bool ok;
    for (; outstanding > 0 && cq.Next(&tag, &ok); --outstanding) {
    }
  }

  absl::Status PullError(const Routes::Table& routes,
                         const PullCall& call) const {
    return GrpcToStatus(call.status,
                        absl::StrCat("Pull from pserver ", call.pserver, " (",
                                     routes.address(call.pserver), ")"));
  }

  absl::Status ScatterRows(const PullCall& call, float* out) const {
    uint32_t server_row_dim = 0;
    absl::Status s = ScatterPullResponse(
        call.response, call.positions, options_.row_dim, out, &server_row_dim);
    if (s.ok()) return s;
    return absl::InternalError(
        absl::StrCat("Pull from pserver ", call.pserver, ": ", s.message()));
  }

  const PsClientOptions options_;
  Routes routes_;      // reads options_
  PushRouter pushes_;  // reads options_ and routes_
  std::atomic<uint64_t> pull_retries_{0};
  const PullMetrics pull_metrics_ = GetPullMetrics();
};

}  // namespace

std::unique_ptr<PsClient> PsClient::Create(const PsClientOptions& options) {
  return std::make_unique<GrpcPsClient>(options);
}

}  // namespace sampan
