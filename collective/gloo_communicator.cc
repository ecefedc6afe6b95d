// The CPU backend: Gloo's TCP transport, rendezvous through CoordinatorStore.
//
// Gloo's older algorithm classes (AllreduceRingChunked, ...) wait with the
// timeout fixed when the connections were made (options.timeout). A call with
// a shorter timeout runs on a worker thread while the caller waits only that
// long; a call whose timeout is at least options.timeout runs on the caller's
// thread, bounded by Gloo itself, and so pays no thread hand-off.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "collective/backends.h"
#include "collective/coordinator_store.h"
#include "gloo/allreduce.h"
#include "gloo/allreduce_halving_doubling.h"
#include "gloo/allreduce_ring_chunked.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/common/error.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"

namespace sampan {
namespace collective {
namespace {

std::chrono::milliseconds Ms(absl::Duration d) {
  return std::max(std::chrono::milliseconds(1), absl::ToChronoMilliseconds(d));
}

// Runs `op`, turning Gloo's exceptions into a status naming `what`.
absl::Status Execute(const std::string& what, const std::function<void()>& op) {
  try {
    op();
    return absl::OkStatus();
  } catch (const gloo::IoException& e) {
    std::string msg = absl::StrCat(what, ": ", e.what());
    if (absl::StrContains(msg, "imed out") ||
        absl::StrContains(msg, "timeout")) {
      return absl::DeadlineExceededError(msg);
    }
    return absl::UnavailableError(msg);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

class GlooCommunicator : public Communicator {
 public:
  explicit GlooCommunicator(const CommunicatorOptions& options)
      : options_(options) {}

  ~GlooCommunicator() override {
    if (worker_.joinable()) {
      {
        absl::MutexLock lock(&mu_);
        stop_ = true;
      }
      // An op abandoned by a timed-out call still owns the caller's buffer;
      // it ends within options.timeout (Gloo's own bound), so this join
      // bounds the wait and guarantees nothing touches the buffer after.
      worker_.join();
    }
  }

  absl::Status Connect() {
    CoordinatorClient client(options_.coordinator_address, absl::Seconds(10),
                             options_.timeout, options_.credentials);
    CoordinatorStore store(&client, options_.name, options_.timeout);
    gloo::transport::tcp::attr attr;
    attr.hostname = options_.hostname;
    return Execute("gloo rendezvous", [&] {
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(options_.rank,
                                                                 options_.size);
      context->setTimeout(Ms(options_.timeout));
      context->connectFullMesh(store, device);
      context_ = std::move(context);
    });
  }

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  const char* backend() const override { return "gloo"; }

  absl::Status AllReduce(float* data, size_t count, ReduceOp op,
                         absl::Duration timeout) override {
    if (count == 0) return absl::OkStatus();
    auto run = [this, data, count, timeout] {
      if (options_.gloo_algorithm == GlooAlgorithm::kGlooAllreduce) {
        gloo::AllreduceOptions opts(context_);
        opts.setOutput(data, count);
        opts.setReduceFunction(
            static_cast<void (*)(void*, const void*, const void*, size_t)>(
                &gloo::sum<float>));
        opts.setTimeout(Ms(timeout));
        gloo::allreduce(opts);
        return;
      }
      Cached& c = CachedAlgorithm(count);
      std::memcpy(c.staging.data(), data, count * sizeof(float));
      c.algorithm->run();
      std::memcpy(data, c.staging.data(), count * sizeof(float));
    };
    if (count > static_cast<size_t>(std::numeric_limits<int>::max())) {
      return absl::InvalidArgumentError("AllReduce: count exceeds 2^31-1");
    }
    if (options_.size > 1) {
      absl::Status s = Run("AllReduce", timeout, run);
      if (!s.ok()) return s;
    }
    if (op == ReduceOp::kAverage && options_.size > 1) {
      const float scale = 1.0f / static_cast<float>(options_.size);
      for (size_t i = 0; i < count; ++i) data[i] *= scale;
    }
    return absl::OkStatus();
  }

  absl::Status Broadcast(float* data, size_t count, int root,
                         absl::Duration timeout) override {
    if (root < 0 || root >= options_.size) {
      return absl::InvalidArgumentError(
          absl::StrCat("Broadcast: root ", root, " out of range"));
    }
    if (count == 0 || options_.size == 1) return absl::OkStatus();
    return Run("Broadcast", timeout, [this, data, count, root, timeout] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(data, count);
      opts.setRoot(root);
      opts.setTimeout(Ms(timeout));
      gloo::broadcast(opts);
    });
  }

  absl::Status Barrier(absl::Duration timeout) override {
    if (options_.size == 1) return absl::OkStatus();
    return Run("Barrier", timeout, [this, timeout] {
      gloo::BarrierOptions opts(context_);
      opts.setTimeout(Ms(timeout));
      gloo::barrier(opts);
    });
  }

 private:
  // Runs one collective within `timeout`; a failure breaks the communicator.
  absl::Status Run(const char* what, absl::Duration timeout,
                   std::function<void()> op) {
    {
      absl::MutexLock lock(&mu_);
      if (!broken_.ok()) return broken_;
    }
    absl::Status s;
    if (timeout >= options_.timeout) {
      s = Execute(what, op);
    } else {
      s = RunOnWorker(what, timeout, std::move(op));
    }
    if (!s.ok()) {
      absl::MutexLock lock(&mu_);
      if (broken_.ok()) broken_ = s;
    }
    return s;
  }

  absl::Status RunOnWorker(const char* what, absl::Duration timeout,
                           std::function<void()> op) {
    absl::MutexLock lock(&mu_);
    if (!worker_.joinable()) worker_ = std::thread([this] { WorkerLoop(); });
    pending_ = std::move(op);
    pending_what_ = what;
    done_ = false;
    if (!mu_.AwaitWithTimeout(absl::Condition(&done_), timeout)) {
      // The worker stays inside Gloo until its own timeout; the broken
      // status keeps every later call away from the half-done exchange.
      return absl::DeadlineExceededError(absl::StrCat(
          what, ": no result within ", absl::FormatDuration(timeout)));
    }
    return result_;
  }

  void WorkerLoop() {
    absl::MutexLock lock(&mu_);
    while (true) {
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || pending_ != nullptr;
      };
      mu_.Await(absl::Condition(&ready));
      if (pending_ == nullptr) return;  // stop_
      std::function<void()> op = std::move(pending_);
      pending_ = nullptr;
      std::string what = pending_what_;
      mu_.Unlock();
      absl::Status s = Execute(what, op);
      mu_.Lock();
      result_ = s;
      done_ = true;
    }
  }

  // An allreduce algorithm bound to its own buffer. Building one per call
  // costs more than the transfer below ~1 MiB (buffer registration, and two
  // count-sized inboxes that fault in page by page), so they are kept per
  // element count. Keyed by count, not by the caller's pointer: every rank
  // makes the same calls with the same counts, so every rank hits or misses
  // alike and Gloo's slot numbers stay in step.
  struct Cached {
    std::vector<float> staging;
    std::unique_ptr<gloo::Algorithm> algorithm;
  };

  Cached& CachedAlgorithm(size_t count) {
    auto it = cache_.find(count);
    if (it != cache_.end()) return it->second;
    if (cache_.size() >= kMaxCached) cache_.clear();  // same on every rank
    Cached& c = cache_[count];
    c.staging.resize(count);
    const int n = static_cast<int>(count);
    if (options_.gloo_algorithm == GlooAlgorithm::kHalvingDoubling) {
      c.algorithm = std::make_unique<gloo::AllreduceHalvingDoubling<float>>(
          context_, std::vector<float*>{c.staging.data()}, n);
    } else {
      c.algorithm = std::make_unique<gloo::AllreduceRingChunked<float>>(
          context_, std::vector<float*>{c.staging.data()}, n);
    }
    return c;
  }

  static constexpr size_t kMaxCached = 16;

  const CommunicatorOptions options_;
  // Used only by the thread running the current collective (see context_).
  std::map<size_t, Cached> cache_;
  // Written by Connect, then used by one collective at a time (the caller's
  // thread or the worker, never both: a timed-out call breaks the
  // communicator before the next can start).
  std::shared_ptr<gloo::Context> context_;

  absl::Mutex mu_;
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  std::function<void()> pending_ ABSL_GUARDED_BY(mu_);
  std::string pending_what_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status result_ ABSL_GUARDED_BY(mu_);
  std::thread worker_;  // Started on the first short-timeout call.
};

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> NewGlooCommunicator(
    const CommunicatorOptions& options) {
  // Gloo writes to sockets without MSG_NOSIGNAL: a peer that died would kill
  // this process with SIGPIPE instead of failing the call with EPIPE.
  struct sigaction old_action;
  if (sigaction(SIGPIPE, nullptr, &old_action) == 0 &&
      old_action.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
  auto comm = std::make_unique<GlooCommunicator>(options);
  absl::Status s = comm->Connect();
  if (!s.ok()) return s;
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace collective
}  // namespace sampan
