// The coordinator at fleet scale (issue 20, item 4): the real coordinator
// service on a loopback port against simulated members, all from this one
// process. --pservers pservers (one fake SparseTable service listening on
// that many ports, whose Checkpoint takes --snapshot_ms) and --trainers
// trainers register at once; then for --seconds every member heartbeats
// once a second (trainers with their progress, as `sampan run`'s do) while
// JobStatus is asked twice a second, and a checkpoint is taken every
// --checkpoint_seconds (trainers pause at the announced epoch and call
// CheckpointArrive, which returns when the round completes). Last, a
// closed loop of --outstanding heartbeats finds the most the coordinator
// answers per second. Prints one line per figure:
//   registration: N members in S s
//   heartbeats: offered/s, answered/s, p50/p99/max latency, errors
//   jobstatus: p50/p99 latency, response bytes
//   checkpoint: rounds completed, p50/max from announcement to completion
//   max heartbeats/s (closed loop)
//
//   bazel build -c opt //bench:fleet_sim && bazel-bin/bench/fleet_sim
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/config.h"
#include "common/flags.h"
#include "coordinator/coordinator.h"
#include "proto/coordinator.grpc.pb.h"
#include "proto/ps.grpc.pb.h"

namespace sampan {
namespace {

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

// The pservers' side: Checkpoint takes --snapshot_ms, as a snapshot would.
class FakePserver final : public ps::SparseTable::Service {
 public:
  explicit FakePserver(absl::Duration snapshot) : snapshot_(snapshot) {}
  grpc::Status Checkpoint(grpc::ServerContext*, const ps::CheckpointRequest*,
                          ps::CheckpointResponse* resp) override {
    absl::SleepFor(snapshot_);
    resp->set_seconds(absl::ToDoubleSeconds(snapshot_));
    calls.fetch_add(1);
    return grpc::Status::OK;
  }
  std::atomic<int> calls{0};

 private:
  const absl::Duration snapshot_;
};

// Latencies of one kind of call, from callbacks on gRPC's threads.
struct Latencies {
  std::mutex mu;
  std::vector<double> ms;
  std::atomic<int> errors{0};
  void Add(absl::Duration d) {
    std::lock_guard<std::mutex> lock(mu);
    ms.push_back(absl::ToDoubleMilliseconds(d));
  }
  std::vector<double> Take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::move(ms);
  }
};

class Sim {
 public:
  Sim(const std::string& address, int channels) {
    for (int i = 0; i < channels; ++i) {
      grpc::ChannelArguments args;
      args.SetInt("grpc.channel_id", i);  // distinct connections
      stubs_.push_back(coord::Coordinator::NewStub(grpc::CreateCustomChannel(
          address, grpc::InsecureChannelCredentials(), args)));
    }
  }

  coord::Coordinator::Stub& stub(int member) {
    return *stubs_[member % stubs_.size()];
  }

  template <typename Req, typename Resp>
  struct Call {
    grpc::ClientContext ctx;
    Req req;
    Resp resp;
    absl::Time start = absl::Now();
    explicit Call(absl::Duration deadline) {
      ctx.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    }
  };

  // Registers every member at once; returns the seconds it took.
  double RegisterAll(int pservers, int trainers,
                     const std::vector<std::string>& addresses) {
    const absl::Time start = absl::Now();
    std::atomic<int> left{pservers + trainers};
    absl::Notification done;
    for (int m = 0; m < pservers + trainers; ++m) {
      using C = Call<coord::RegisterRequest, coord::RegisterResponse>;
      auto* c = new C(absl::Seconds(60));
      const bool ps = m < pservers;
      c->req.set_role(ps ? coord::PSERVER : coord::TRAINER);
      c->req.set_index(ps ? m : m - pservers);
      if (ps) c->req.set_address(addresses[m]);
      stub(m).async()->Register(
          &c->ctx, &c->req, &c->resp, [&, c](grpc::Status s) {
            if (!s.ok()) {
              std::fprintf(stderr, "Register: %s\n", s.error_message().c_str());
              register_errors.fetch_add(1);
            }
            delete c;
            if (left.fetch_sub(1) == 1) done.Notify();
          });
    }
    done.WaitForNotification();
    return absl::ToDoubleSeconds(absl::Now() - start);
  }

  // One heartbeat of member m (trainers after the pservers); a trainer
  // answered with a new checkpoint epoch arrives for it.
  void Heartbeat(int m, int pservers, std::atomic<int>* in_flight) {
    using C = Call<coord::HeartbeatRequest, coord::HeartbeatResponse>;
    auto* c = new C(absl::Seconds(10));
    const bool ps = m < pservers;
    const int index = ps ? m : m - pservers;
    c->req.set_role(ps ? coord::PSERVER : coord::TRAINER);
    c->req.set_index(index);
    if (!ps) {
      coord::TrainerProgress* p = c->req.mutable_progress();
      const uint64_t n = examples_.fetch_add(1000);
      p->set_examples(n);
      p->set_loss_sum(0.45 * n);
      p->set_train_auc(0.78);
      p->set_fraction_done(0.5);
    }
    in_flight->fetch_add(1);
    stub(m).async()->Heartbeat(&c->ctx, &c->req, &c->resp,
                               [this, c, ps, index, in_flight](grpc::Status s) {
                                 if (s.ok()) {
                                   heartbeats.Add(absl::Now() - c->start);
                                   if (!ps && c->resp.checkpoint_epoch() > 0) {
                                     MaybeArrive(index,
                                                 c->resp.checkpoint_epoch());
                                   }
                                 } else {
                                   heartbeats.errors.fetch_add(1);
                                 }
                                 delete c;
                                 in_flight->fetch_sub(1);
                               });
  }

  void MaybeArrive(int rank, uint64_t epoch) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (arrived_.size() <= static_cast<size_t>(rank)) {
        arrived_.resize(rank + 1, 0);
      }
      if (arrived_[rank] >= epoch) return;
      arrived_[rank] = epoch;
      if (announced_.size() <= epoch) {
        announced_.resize(epoch + 1, absl::InfiniteFuture());
      }
      announced_[epoch] = std::min(announced_[epoch], absl::Now());
    }
    using C =
        Call<coord::CheckpointArriveRequest, coord::CheckpointArriveResponse>;
    auto* c = new C(absl::Seconds(120));
    c->req.set_epoch(epoch);
    c->req.mutable_position()->set_rank(rank);
    c->req.mutable_position()->set_steps(1000);
    stub(rank).async()->CheckpointArrive(
        &c->ctx, &c->req, &c->resp, [this, c, epoch](grpc::Status s) {
          if (s.ok() && c->resp.completed() && c->resp.epoch() == epoch) {
            std::lock_guard<std::mutex> lock(mu_);
            absl::Time& t = completed_[epoch];
            t = std::max(t, absl::Now());
          } else if (!s.ok() || !c->resp.completed()) {
            arrive_failures.fetch_add(1);
            if (arrive_failures.load() < 5) {
              std::fprintf(stderr, "CheckpointArrive %d: %s %s\n",
                           static_cast<int>(epoch), s.error_message().c_str(),
                           c->resp.reason().c_str());
            }
          }
          delete c;
        });
  }

  // Seconds from each epoch's first announcement to its last arrival's
  // answer, for the rounds that completed.
  std::vector<double> RoundSeconds() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<double> out;
    for (const auto& [epoch, t] : completed_) {
      if (epoch < announced_.size()) {
        out.push_back(absl::ToDoubleSeconds(t - announced_[epoch]));
      }
    }
    return out;
  }

  Latencies heartbeats;
  std::atomic<int> register_errors{0}, arrive_failures{0};

 private:
  std::vector<std::unique_ptr<coord::Coordinator::Stub>> stubs_;
  std::atomic<uint64_t> examples_{0};
  std::mutex mu_;
  std::vector<uint64_t> arrived_;             // guarded by mu_
  std::vector<absl::Time> announced_;         // guarded by mu_
  std::map<uint64_t, absl::Time> completed_;  // guarded by mu_
};

// Flags (defaults): --pservers (500) --trainers (2000) --shards (4096)
// --seconds (20, the heartbeat phase) --checkpoint_seconds (5)
// --snapshot_ms (200, each pserver's snapshot) --outstanding (256, the
// closed loop's heartbeats in flight) --channels (32 connections).
int Main(int argc, char** argv) {
  absl::StatusOr<Flags> flags = Flags::Parse(
      argc, argv, 1,
      {"pservers", "trainers", "shards", "seconds", "checkpoint_seconds",
       "snapshot_ms", "outstanding", "channels"});
  if (!flags.ok()) {
    std::fprintf(stderr, "%s\n", flags.status().ToString().c_str());
    return 2;
  }
  const auto flag = [&](const char* name, int def) {
    absl::StatusOr<int64_t> v = flags->GetInt(name, def);
    if (!v.ok() || *v <= 0) {
      std::fprintf(stderr, "--%s: a positive integer, please\n", name);
      std::exit(2);
    }
    return static_cast<int>(*v);
  };
  const int pservers = flag("pservers", 500);
  const int trainers = flag("trainers", 2000);
  const int shards = flag("shards", 4096);
  const int checkpoint_seconds = flag("checkpoint_seconds", 5);
  const int snapshot_ms = flag("snapshot_ms", 200);
  const int seconds = flag("seconds", 20);
  const int outstanding = flag("outstanding", 256);
  const int channels = flag("channels", 32);
  const std::string dir = std::filesystem::temp_directory_path() /
                          absl::StrCat("sampan-fleet-sim-", getpid());
  const std::string yaml = absl::StrFormat(
      "name: fleet-sim\noutput_dir: %s\n"
      "cluster: {num_pservers: %d, num_trainers: %d, "
      "heartbeat_timeout_seconds: 30, wait_timeout_seconds: 120}\n"
      "table: {num_shards: %d, backend: ROCKSDB}\n"
      "checkpoint: {every_seconds: %d, keep: 2}\n"
      "data: {synthetic: {rows: 1000}}\n",
      dir, pservers, trainers, shards, checkpoint_seconds);
  absl::StatusOr<JobConfig> config = ParseJobConfig(yaml, "fleet_sim");
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n",
                 std::string(config.status().message()).c_str());
    return 2;
  }

  // The fake pservers: one service, a port each.
  FakePserver fake(absl::Milliseconds(snapshot_ms));
  grpc::ServerBuilder ps_builder;
  std::vector<int> ports(pservers, 0);
  for (int i = 0; i < pservers; ++i) {
    ps_builder.AddListeningPort("127.0.0.1:0",
                                grpc::InsecureServerCredentials(), &ports[i]);
  }
  ps_builder.RegisterService(&fake);
  std::unique_ptr<grpc::Server> ps_server = ps_builder.BuildAndStart();
  std::vector<std::string> addresses;
  for (int p : ports) addresses.push_back(absl::StrCat("127.0.0.1:", p));

  // The real coordinator.
  std::unique_ptr<CoordinatorService> service =
      NewCoordinatorService(*config, "fleet-sim");
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(service.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  Sim sim(absl::StrCat("127.0.0.1:", port), channels);

  const int members = pservers + trainers;
  const double reg = sim.RegisterAll(pservers, trainers, addresses);
  std::printf(
      "registration: %d members (%d pservers, %d trainers) in %.3f s, "
      "%d errors\n",
      members, pservers, trainers, reg, sim.register_errors.load());

  // Heartbeats: every member once a second, spread over the second; a
  // JobStatus twice a second.
  std::atomic<int> in_flight{0};
  std::atomic<bool> stop{false};
  Latencies status_ms;
  std::atomic<size_t> status_bytes{0};
  std::thread status_thread([&] {
    while (!stop.load()) {
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
      coord::JobStatusRequest req;
      coord::JobStatusResponse resp;
      const absl::Time t = absl::Now();
      grpc::Status s = sim.stub(0).JobStatus(&ctx, req, &resp);
      if (s.ok()) {
        status_ms.Add(absl::Now() - t);
        status_bytes = resp.ByteSizeLong();
      } else {
        status_ms.errors.fetch_add(1);
      }
      absl::SleepFor(absl::Milliseconds(500));
    }
  });
  const absl::Time start = absl::Now();
  int64_t sent = 0;
  constexpr int kSlices = 100;  // a 10 ms slice of the second each
  for (int64_t slice = 0; absl::Now() - start < absl::Seconds(seconds);
       ++slice) {
    const int first = static_cast<int>((slice % kSlices) * members / kSlices);
    const int last =
        static_cast<int>(((slice % kSlices) + 1) * members / kSlices);
    for (int m = first; m < last; ++m) sim.Heartbeat(m, pservers, &in_flight);
    sent += last - first;
    absl::SleepFor(start + absl::Milliseconds(10 * (slice + 1)) - absl::Now());
  }
  const double took = absl::ToDoubleSeconds(absl::Now() - start);
  while (in_flight.load() > 0) absl::SleepFor(absl::Milliseconds(10));
  const std::vector<double> hb = sim.heartbeats.Take();
  std::printf(
      "heartbeats: %.0f/s offered, %.0f/s answered, latency p50 %.2f ms "
      "p99 %.2f ms max %.2f ms, %d errors\n",
      sent / took, hb.size() / took, Percentile(hb, 0.5), Percentile(hb, 0.99),
      Percentile(hb, 1.0), sim.heartbeats.errors.load());
  stop = true;
  status_thread.join();
  const std::vector<double> st = status_ms.Take();
  std::printf(
      "jobstatus: %zu calls, latency p50 %.2f ms p99 %.2f ms, "
      "response %zu bytes, %d errors\n",
      st.size(), Percentile(st, 0.5), Percentile(st, 0.99), status_bytes.load(),
      status_ms.errors.load());
  // Let the last round end.
  absl::SleepFor(absl::Seconds(2));
  const std::vector<double> rounds = sim.RoundSeconds();
  std::printf(
      "checkpoint: %zu rounds completed (%d pserver snapshots of %d ms), "
      "announcement to completion p50 %.2f s max %.2f s, %d arrivals "
      "failed\n",
      rounds.size(), fake.calls.load(), snapshot_ms, Percentile(rounds, 0.5),
      Percentile(rounds, 1.0), sim.arrive_failures.load());

  // Closed loop: the most heartbeats answered per second.
  const absl::Time loop_start = absl::Now();
  sim.heartbeats.Take();
  int m = 0;
  while (absl::Now() - loop_start < absl::Seconds(5)) {
    while (in_flight.load() < outstanding) {
      sim.Heartbeat(m, pservers, &in_flight);
      m = (m + 1) % members;
    }
    absl::SleepFor(absl::Microseconds(200));
  }
  while (in_flight.load() > 0) absl::SleepFor(absl::Milliseconds(10));
  const std::vector<double> loop = sim.heartbeats.Take();
  const double loop_took = absl::ToDoubleSeconds(absl::Now() - loop_start);
  std::printf(
      "max heartbeats: %.0f/s answered with %d in flight, p50 %.2f ms "
      "p99 %.2f ms\n",
      loop.size() / loop_took, outstanding, Percentile(loop, 0.5),
      Percentile(loop, 0.99));
  server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  ps_server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) { return sampan::Main(argc, argv); }
