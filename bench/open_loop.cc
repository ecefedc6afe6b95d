#include "bench/open_loop.h"

#include <grpcpp/grpcpp.h>

#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/thread_priority.h"

namespace sampan {
namespace {

// One call in flight: owned by the sender until Finish, then by the reaper
// (the completion queue hands it over), which deletes it.
struct Pending {
  grpc::ClientContext ctx;
  serving::PredictResponse resp;
  grpc::Status status;
  absl::Time scheduled;
  std::unique_ptr<grpc::ClientAsyncResponseReader<serving::PredictResponse>>
      rpc;
};

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

}  // namespace

OpenLoopCalls RunOpenLoop(
    const std::vector<std::unique_ptr<serving::Predictor::Stub>>& stubs,
    const std::vector<serving::PredictRequest>& requests, double rate,
    absl::Time from, absl::Time to, uint64_t seed, int nice) {
  OpenLoopCalls out;
  if (nice != 0) SetCurrentThreadNice(nice);
  grpc::CompletionQueue cq;
  // The reaper alone writes out.latency_ms, examples, errors and
  // first_error until it is joined.
  std::thread reaper([&] {
    if (nice != 0) SetCurrentThreadNice(nice);
    void* tag = nullptr;
    bool ok = false;
    while (cq.Next(&tag, &ok)) {
      std::unique_ptr<Pending> p(static_cast<Pending*>(tag));
      const absl::Time done = absl::Now();
      if (p->scheduled >= from && done <= to) {
        if (ok && p->status.ok()) {
          out.latency_ms.push_back(Ms(done - p->scheduled));
          out.examples += p->resp.probabilities_size();
        } else {
          ++out.errors;
        }
      }
      if (!(ok && p->status.ok()) && out.first_error.empty()) {
        out.first_error = ok ? absl::StrCat(p->status.error_code(), ": ",
                                            p->status.error_message())
                             : "completion queue: call not ok";
      }
    }
  });
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  size_t k = rng() % requests.size(), s = 0;
  for (absl::Time next = absl::Now() + absl::Seconds(gap(rng)); next < to;
       next += absl::Seconds(gap(rng))) {
    absl::SleepFor(next - absl::Now());
    const absl::Time sent = absl::Now();
    if (next >= from) out.send_lag_ms.push_back(Ms(sent - next));
    auto* p = new Pending;
    p->scheduled = next;
    p->ctx.set_deadline(absl::ToChronoTime(sent + absl::Seconds(5)));
    p->rpc = stubs[s]->AsyncPredict(&p->ctx, requests[k], &cq);
    p->rpc->Finish(&p->resp, &p->status, p);
    k = (k + 1) % requests.size();
    s = (s + 1) % stubs.size();
  }
  // No call starts after this; Next still hands the reaper every call
  // already started as it ends (each has a 5 s deadline), then returns
  // false.
  cq.Shutdown();
  reaper.join();
  return out;
}

}  // namespace sampan
