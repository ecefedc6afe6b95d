// `sampan serve` throughput and latency against its in-process limit
// (issue 18), driven by bench/serving_bench.sh.
//
// 1. Writes the model directory and draws the requests of
//    bench/serving_bench_model.h (--model, --rows, --dim, --hidden, --dist,
//    --pool; --sizes examples a request, --forms `examples` or `lines`).
// 2. Starts `sampan serve` (--sampan) on the model as a separate process on
//    a loopback port, as production runs it: the client's and the server's
//    CPU are then both charged to the 2 cores, and the server's share is read
//    from /proc. --serving is a text-format ServingConfig merged into the
//    served job (the hook for the RocksDB-backed store: its memory budget).
//    --server_wrap puts words before its command (a profiler: "perf record
//    -e cpu-clock -g -o FILE --"); the server gets SIGTERM at the end.
//    --prewarm seconds of closed-loop calls come first, not counted (a
//    store's hot tier fills). With --shards=N (N > 1) it also starts N
//    lookup shards and a predictor front end on the same model
//    (--shard_serving: their ServingConfig fields; each shard keeps its
//    rows in a store, in its hot tier when the budget allows) and runs
//    their rpc and half runs right after the one-process server's: the
//    cost of sharding on loopback (bench/serving_bench_server.h).
// 3. For each of --reps repetitions, each size and form, alternating:
//      rpc    --clients closed-loop threads, each with its own channel and
//             stub (its own TCP connection), for --seconds after --warmup:
//             examples/s, requests/s, latency p50/p99/p999;
//      limit  the same requests' Batches (RequestToBatch done beforehand)
//             scored by ScoreBatch on the ScoringModel loaded here from the
//             same directory, --clients threads, no RPC: examples/s;
//      handler  ScoreRequest on the same PredictRequests in-process: the
//             server's work without gRPC (conversion included);
//      half   open loop at half the rpc run's requests/s (or --half_rate
//             requests/s, the same for builds compared): Poisson arrivals,
//             each call sent at its time by bench/open_loop.h over
//             --clients connections (--open_loop=threads: spread over
//             2 x --clients blocking threads instead), latency counted
//             from each call's scheduled start (no coordinated omission).
//    Then the medians over the repetitions, and the ratio rpc / limit.
//
// Output: one table row per run, then per size and form a line
//   RESULT model=.. rows=.. form=.. size=.. rpc_ex_s=.. rpc_req_s=..
//   p50_ms=.. p99_ms=.. p999_ms=.. limit_ex_s=.. handler_ex_s=.. ratio=..
//   server_cpu=.. client_cpu=.. (cores) rpc_ex_cpu_s=.. limit_ex_cpu_s=..
//   cpu_ratio=.. (examples per CPU-second of each run's processes)
//   half_req_s=.. half_p50_ms=.. half_p99_ms=.. half_p999_ms=..
//   half_server_p99_ms=.. half_server_over_10ms=.. (the server's own
//   histogram of its calls: its p99 within a bucket, the share over 10 ms)
//   and with --shards: shards=.. sharded_ex_s=.. sharded_p50_ms=..
//   sharded_p99_ms=.. sharded_server_cpu=.. (every shard and the front end)
//   sharded_ex_cpu_s=.. sharded_ratio=.. sharded_cpu_ratio=.. (sharded /
//   one process) sharded_half_req_s=.. sharded_half_p99_ms=..
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/open_loop.h"
#include "bench/serving_bench_model.h"
#include "bench/serving_bench_server.h"
#include "common/flags.h"
#include "common/thread_priority.h"
#include "google/protobuf/text_format.h"
#include "proto/serving.grpc.pb.h"
#include "serving/request_batch.h"
#include "trainer/scoring.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

struct BenchOptions {
  BenchModelOptions m;  // the model and the examples
  std::string dir = "/tmp/sampan-serving-bench";
  std::string sampan = "bazel-bin/cli/sampan";
  std::string serving;  // text-format ServingConfig fields
  // Words run before the server's command line ("perf record -g -o F --").
  std::string server_wrap;
  std::vector<int> sizes = {1, 100};
  std::vector<std::string> forms = {"examples"};
  int clients = 4;
  double seconds = 5, warmup = 1;
  // Closed-loop calls before the first rep, not counted: a store's hot tier
  // fills (serving/hot_rows.h).
  double prewarm = 0;
  int reps = 3;
  bool half = true;
  // The half run's requests/s; 0 = half of the same rep's rpc run. Fixed,
  // it gives builds compared side by side the same offered load.
  double half_rate = 0;
  // Nice value of the client's calling threads (rpc and half runs). The
  // client shares the cores with the server here; below 0 its threads
  // preempt the server's, as if the client had a machine of its own (needs
  // CAP_SYS_NICE; without it a warning, and the runs go on at 0).
  int client_nice = 0;
  // The half runs' generator: "async" (bench/open_loop.h: every call sent
  // at its scheduled time) or "threads" (2 x --clients blocking threads,
  // Poisson each; a thread whose call is out sends its next one late).
  std::string open_loop = "async";
  // With N > 1: N lookup shards and a predictor front end on the same model
  // too (text-format ServingConfig fields for them in shard_serving), whose
  // rpc and half runs follow the one-process server's in every rep.
  int shards = 0;
  std::string shard_serving = "memory_budget_mb: 256";
};

// ----------------------------------------------------------------- the runs

struct RunResult {
  double examples_per_s = 0, requests_per_s = 0;
  double p50 = 0, p99 = 0, p999 = 0;      // ms
  double server_cpu = 0, client_cpu = 0;  // cores busy over the run
  // The server's resident memory at the end of the run and its peak, MB.
  double server_rss = 0, server_hwm = 0;
  uint64_t errors = 0;
  // As the server counted its calls (ScrapeServerLatency; from the end of
  // the run's warmup): the share over 10 ms and its p99, ms; -1 without.
  double server_over_10ms = -1, server_p99 = -1;
  // Open loop: how late the client's threads started their calls (a
  // thread's wake-up delay on cores the server keeps busy), p99, ms.
  double send_lag_p99 = -1;
};

double Percentile(std::vector<double>* v, double q) {
  if (v->empty()) return 0;
  const size_t i = std::min(v->size() - 1, size_t(q * v->size()));
  std::nth_element(v->begin(), v->begin() + i, v->end());
  return (*v)[i];
}

double SelfCpu() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Runs `threads` copies of `call(thread, &latencies_ms, &examples)` until
// the window ends; samples CPU over the measured window. Each call returns
// whether it was in the window (counted) and its latency.
template <typename Body>
RunResult RunThreads(const BenchOptions& o, int threads,
                     const std::vector<pid_t>& servers, Body body) {
  const absl::Time start = absl::Now() + absl::Milliseconds(50);
  const absl::Time from = start + absl::Seconds(o.warmup);
  const absl::Time to = from + absl::Seconds(o.seconds);
  std::vector<std::vector<double>> lat(threads);
  std::vector<uint64_t> examples(threads, 0), errors(threads, 0);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      absl::SleepFor(start - absl::Now());
      body(t, from, to, &lat[t], &examples[t], &errors[t]);
    });
  }
  absl::SleepFor(from - absl::Now());
  auto server_cpu = [&] {
    double cpu = 0;
    for (pid_t pid : servers) cpu += ProcessCpu(pid);
    return cpu;
  };
  const double cpu0 = SelfCpu(), srv0 = server_cpu();
  absl::SleepFor(to - absl::Now());
  const double cpu1 = SelfCpu(), srv1 = server_cpu();
  for (std::thread& t : pool) t.join();
  RunResult r;
  std::vector<double> all;
  for (int t = 0; t < threads; ++t) {
    all.insert(all.end(), lat[t].begin(), lat[t].end());
    r.examples_per_s += examples[t];
    r.errors += errors[t];
  }
  r.requests_per_s = all.size() / o.seconds;
  r.examples_per_s /= o.seconds;
  r.p50 = Percentile(&all, 0.5);
  r.p99 = Percentile(&all, 0.99);
  r.p999 = Percentile(&all, 0.999);
  r.client_cpu = (cpu1 - cpu0) / o.seconds;
  r.server_cpu = (srv1 - srv0) / o.seconds;
  for (pid_t pid : servers) {  // summed over the processes
    r.server_rss += ProcStatusMb(pid, "VmRSS");
    r.server_hwm += ProcStatusMb(pid, "VmHWM");
  }
  return r;
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

// Poisson arrivals at `rate` requests/s from RunOpenLoop: one sending
// thread, --clients connections.
RunResult RunAsyncOpenLoop(const BenchOptions& o, const Servers& servers,
                           const std::vector<serving::PredictRequest>& requests,
                           double rate) {
  std::vector<std::unique_ptr<serving::Predictor::Stub>> stubs;
  for (int c = 0; c < o.clients; ++c) stubs.push_back(NewStub(servers.target));
  std::vector<double> lags;
  RunResult result = RunThreads(
      o, 1, servers.pids,
      [&](int, absl::Time from, absl::Time to, std::vector<double>* lat,
          uint64_t* examples, uint64_t* errors) {
        OpenLoopCalls calls =
            RunOpenLoop(stubs, requests, rate, from, to, 1, o.client_nice);
        if (o.client_nice != 0 && CurrentThreadNice() != o.client_nice) {
          std::fprintf(stderr, "warning: --client_nice=%d not applied\n",
                       o.client_nice);
        }
        if (!calls.first_error.empty()) {
          std::fprintf(stderr, "Predict failed: %s\n",
                       calls.first_error.c_str());
        }
        *lat = std::move(calls.latency_ms);
        *examples = calls.examples;
        *errors = calls.errors;
        lags = std::move(calls.send_lag_ms);
      });
  result.send_lag_p99 = Percentile(&lags, 0.99);
  return result;
}

// Closed loop (rate 0) or Poisson arrivals at `rate` requests/s in all (the
// async generator unless --open_loop=threads).
RunResult RunRpc(const BenchOptions& o, const Servers& servers,
                 const std::vector<serving::PredictRequest>& requests,
                 double rate) {
  if (rate > 0 && o.open_loop == "async") {
    return RunAsyncOpenLoop(o, servers, requests, rate);
  }
  const int threads = rate > 0 ? 2 * o.clients : o.clients;
  std::vector<std::unique_ptr<serving::Predictor::Stub>> stubs;
  for (int t = 0; t < threads; ++t) stubs.push_back(NewStub(servers.target));
  std::atomic<bool> reported{false};
  std::vector<std::vector<double>> lags(threads);
  RunResult result = RunThreads(
      o, threads, servers.pids,
      [&](int t, absl::Time from, absl::Time to, std::vector<double>* lat,
          uint64_t* examples, uint64_t* errors) {
        if (o.client_nice != 0) {
          SetCurrentThreadNice(o.client_nice);
          if (CurrentThreadNice() != o.client_nice && t == 0) {
            std::fprintf(stderr, "warning: --client_nice=%d not applied\n",
                         o.client_nice);
          }
        }
        std::mt19937_64 rng(t + 1);
        std::exponential_distribution<double> gap(rate > 0 ? rate / threads
                                                           : 1);
        serving::PredictResponse resp;
        std::string error;
        absl::Time next = absl::Now();
        for (size_t k = rng() % requests.size();;
             k = (k + 1) % requests.size()) {
          if (rate > 0) {
            next += absl::Seconds(gap(rng));
            if (next >= to) break;
            absl::SleepFor(next - absl::Now());
            if (next >= from) lags[t].push_back(Ms(absl::Now() - next));
          } else {
            next = absl::Now();
            if (next >= to) break;
          }
          const bool ok = Call(stubs[t].get(), requests[k], &resp, &error);
          const absl::Time done = absl::Now();
          if (!ok && !reported.exchange(true)) {
            std::fprintf(stderr, "Predict failed: %s\n", error.c_str());
          }
          if (next < from || done > to) continue;
          if (!ok) {
            ++*errors;
            continue;
          }
          lat->push_back(Ms(done - next));
          *examples += resp.probabilities_size();
        }
      });
  if (rate > 0) {
    std::vector<double> all;
    for (const std::vector<double>& l : lags) {
      all.insert(all.end(), l.begin(), l.end());
    }
    result.send_lag_p99 = Percentile(&all, 0.99);
  }
  return result;
}

// In-process: `score(thread, k)` scores request k, returns its examples.
template <typename Score>
RunResult RunLocal(const BenchOptions& o, size_t n, Score score) {
  return RunThreads(
      o, o.clients, {},
      [&](int t, absl::Time from, absl::Time to, std::vector<double>* lat,
          uint64_t* examples, uint64_t*) {
        std::mt19937_64 rng(t + 1);
        for (size_t k = rng() % n;; k = (k + 1) % n) {
          const absl::Time begin = absl::Now();
          if (begin >= to) break;
          const size_t e = score(t, k);
          const absl::Time done = absl::Now();
          if (begin < from || done > to) continue;
          lat->push_back(Ms(done - begin));
          *examples += e;
        }
      });
}

// ------------------------------------------------------------------- report

double Median(std::vector<double> v) { return Percentile(&v, 0.5); }

// The host's 1-minute load average: other work on the shared cores.
std::string LoadAverage() {
  std::string load;
  std::ifstream("/proc/loadavg") >> load;
  return load;
}

void PrintRow(const char* what, int rep, const RunResult& r) {
  std::printf(
      "  %-8s rep %d  %10.0f ex/s %9.0f req/s  p50 %7.3f  p99 %7.3f  p999 "
      "%7.3f ms  cpu client %.2f server %.2f%s  load %s%s\n",
      what, rep, r.examples_per_s, r.requests_per_s, r.p50, r.p99, r.p999,
      r.client_cpu, r.server_cpu,
      r.server_rss > 0 ? absl::StrFormat("  server RSS %.0f MB (peak %.0f)",
                                         r.server_rss, r.server_hwm)
                             .c_str()
                       : "",
      LoadAverage().c_str(),
      r.errors ? absl::StrCat("  ERRORS ", r.errors).c_str() : "");
  if (r.server_p99 >= 0) {
    std::printf(
        "  %-8s        in the server: p99 %.1f ms, %.2f%% of calls over "
        "10 ms (from its histogram's buckets); client sends late by up to "
        "%.2f ms (p99)\n",
        "", r.server_p99, 100 * r.server_over_10ms, r.send_lag_p99);
  }
}

struct Case {
  int size;
  std::string form;
  std::vector<serving::PredictRequest> requests;
  std::vector<Batch> batches;
  std::vector<RunResult> rpc, limit, handler, half;
  std::vector<RunResult> sharded, sharded_half;  // with --shards
};

// Examples per CPU-second of the run's processes (server and client for
// rpc): what each run would do with the cores to itself. On shared cores
// the wall rates measure the scheduler too: 4 client threads plus the
// server's get a larger share of a loaded host than the limit's 4.
double PerCpu(const RunResult& r) {
  const double cpu = r.client_cpu + r.server_cpu;
  return cpu > 0 ? r.examples_per_s / cpu : 0;
}

void Report(const BenchOptions& o, size_t rows, const Case& c) {
  auto med = [](const std::vector<RunResult>& v, double RunResult::*f) {
    std::vector<double> x;
    for (const RunResult& r : v) x.push_back(r.*f);
    return Median(x);
  };
  std::vector<double> ratios, cpu_ratios, rpc_cpu, limit_cpu;
  for (size_t i = 0; i < c.rpc.size(); ++i) {
    ratios.push_back(c.rpc[i].examples_per_s / c.limit[i].examples_per_s);
    rpc_cpu.push_back(PerCpu(c.rpc[i]));
    limit_cpu.push_back(PerCpu(c.limit[i]));
    cpu_ratios.push_back(rpc_cpu.back() / limit_cpu.back());
  }
  double hwm = 0;
  for (const RunResult& r : c.rpc) hwm = std::max(hwm, r.server_hwm);
  for (const RunResult& r : c.half) hwm = std::max(hwm, r.server_hwm);
  std::printf(
      "RESULT model=%s rows=%zu form=%s size=%d clients=%d rpc_ex_s=%.0f "
      "rpc_req_s=%.0f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f limit_ex_s=%.0f "
      "handler_ex_s=%.0f ratio=%.3f server_cpu=%.2f client_cpu=%.2f "
      "rpc_ex_cpu_s=%.0f limit_ex_cpu_s=%.0f cpu_ratio=%.3f "
      "server_peak_rss_mb=%.0f",
      o.m.model.c_str(), rows, c.form.c_str(), c.size, o.clients,
      med(c.rpc, &RunResult::examples_per_s),
      med(c.rpc, &RunResult::requests_per_s), med(c.rpc, &RunResult::p50),
      med(c.rpc, &RunResult::p99), med(c.rpc, &RunResult::p999),
      med(c.limit, &RunResult::examples_per_s),
      med(c.handler, &RunResult::examples_per_s), Median(ratios),
      med(c.rpc, &RunResult::server_cpu), med(c.rpc, &RunResult::client_cpu),
      Median(rpc_cpu), Median(limit_cpu), Median(cpu_ratios), hwm);
  if (!c.half.empty()) {
    std::printf(
        " half_req_s=%.0f half_p50_ms=%.3f half_p99_ms=%.3f "
        "half_p999_ms=%.3f half_server_p99_ms=%.2f "
        "half_server_over_10ms=%.4f",
        med(c.half, &RunResult::requests_per_s), med(c.half, &RunResult::p50),
        med(c.half, &RunResult::p99), med(c.half, &RunResult::p999),
        med(c.half, &RunResult::server_p99),
        med(c.half, &RunResult::server_over_10ms));
  }
  if (!c.sharded.empty()) {
    std::vector<double> vs_one, vs_one_cpu;
    for (size_t i = 0; i < c.sharded.size(); ++i) {
      vs_one.push_back(c.sharded[i].examples_per_s / c.rpc[i].examples_per_s);
      vs_one_cpu.push_back(PerCpu(c.sharded[i]) / PerCpu(c.rpc[i]));
    }
    std::printf(
        " shards=%d sharded_ex_s=%.0f sharded_p50_ms=%.3f sharded_p99_ms=%.3f "
        "sharded_server_cpu=%.2f sharded_ex_cpu_s=%.0f sharded_ratio=%.3f "
        "sharded_cpu_ratio=%.3f",
        o.shards, med(c.sharded, &RunResult::examples_per_s),
        med(c.sharded, &RunResult::p50), med(c.sharded, &RunResult::p99),
        med(c.sharded, &RunResult::server_cpu),
        [&] {
          std::vector<double> x;
          for (const RunResult& r : c.sharded) x.push_back(PerCpu(r));
          return Median(x);
        }(),
        Median(vs_one), Median(vs_one_cpu));
    if (!c.sharded_half.empty()) {
      std::printf(" sharded_half_req_s=%.0f sharded_half_p99_ms=%.3f",
                  med(c.sharded_half, &RunResult::requests_per_s),
                  med(c.sharded_half, &RunResult::p99));
    }
  }
  std::printf("\n");
}

// ---------------------------------------------------------------------- main

std::vector<int> IntList(const std::string& s) {
  std::vector<int> out;
  for (absl::string_view x : absl::StrSplit(s, ',', absl::SkipEmpty())) {
    int v = 0;
    if (!absl::SimpleAtoi(x, &v) || v <= 0) {
      std::fprintf(stderr, "expected positive integers, got %s\n", s.c_str());
      std::exit(2);
    }
    out.push_back(v);
  }
  return out;
}

BenchOptions ParseBenchFlags(int argc, char** argv) {
  absl::StatusOr<Flags> f = Flags::Parse(
      argc, argv, 1,
      {"model",     "rows",        "dim",      "hidden", "dir",
       "sampan",    "serving",     "sizes",    "forms",  "dist",
       "pool",      "clients",     "seconds",  "warmup", "reps",
       "half",      "server_wrap", "prewarm",  "shards", "shard_serving",
       "half_rate", "client_nice", "open_loop"});
  if (!f.ok()) {
    std::fprintf(stderr, "%s\n", f.status().ToString().c_str());
    std::exit(2);
  }
  BenchOptions o;
  auto num = [&](const char* name, double def) {
    return NumberFlag(*f, name, def);
  };
  o.m.model = f->Get("model", o.m.model);
  o.m.rows = int64_t(num("rows", o.m.rows));
  o.m.dim = int(num("dim", o.m.dim));
  if (f->Has("hidden")) o.m.hidden = IntList(f->Get("hidden"));
  o.dir = f->Get("dir", o.dir);
  o.sampan = f->Get("sampan", o.sampan);
  o.serving = f->Get("serving");
  o.server_wrap = f->Get("server_wrap");
  if (f->Has("sizes")) o.sizes = IntList(f->Get("sizes"));
  if (f->Has("forms")) o.forms = absl::StrSplit(f->Get("forms"), ',');
  for (const std::string& form : o.forms) {
    if (form != "examples" && form != "lines") {
      std::fprintf(stderr, "--forms: examples or lines, got %s\n",
                   form.c_str());
      std::exit(2);
    }
  }
  o.m.zipf = f->Get("dist", "zipf") != "uniform";
  o.m.pool = int(num("pool", o.m.pool));
  o.clients = int(num("clients", o.clients));
  o.seconds = num("seconds", o.seconds);
  o.warmup = num("warmup", o.warmup);
  o.prewarm = num("prewarm", o.prewarm);
  o.shards = int(num("shards", o.shards));
  o.shard_serving = f->Get("shard_serving", o.shard_serving);
  o.reps = int(num("reps", o.reps));
  o.half = f->Get("half", "1") != "0";
  o.half_rate = num("half_rate", 0);
  o.client_nice = int(num("client_nice", 0));
  o.open_loop = f->Get("open_loop", o.open_loop);
  if (o.open_loop != "async" && o.open_loop != "threads") {
    std::fprintf(stderr, "--open_loop: async or threads, got %s\n",
                 o.open_loop.c_str());
    std::exit(2);
  }
  return o;
}

// Merges text-format ServingConfig fields into config's serving (exits 2
// when they are not).
void MergeServing(const std::string& text, JobConfig* config) {
  if (!google::protobuf::TextFormat::MergeFromString(
          text, config->mutable_serving())) {
    std::fprintf(stderr, "not ServingConfig fields: %s\n", text.c_str());
    std::exit(2);
  }
}

int Main(int argc, char** argv) {
  const BenchOptions o = ParseBenchFlags(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress as it happens
  fs::create_directories(o.dir);
  const std::string model_dir =
      absl::StrCat(o.dir, "/model-", o.m.model, "-", o.m.rows);
  const size_t rows = WriteBenchModel(o.m, model_dir);
  ServeCommand cmd;
  cmd.sampan = o.sampan;
  cmd.wrap = o.server_wrap;
  cmd.dir = o.dir;
  JobConfig config = BenchJob(o.m);
  config.mutable_serving()->set_model(model_dir);
  MergeServing(o.serving, &config);
  const Servers server = StartOneProcess(cmd, config, "serve");
  Servers sharded;
  if (o.shards > 1) {
    JobConfig shard_config = BenchJob(o.m);
    shard_config.mutable_serving()->set_model(model_dir);
    shard_config.mutable_serving()->set_store_dir(o.dir + "/shards-store");
    shard_config.mutable_serving()->set_shards(uint32_t(o.shards));
    MergeServing(o.shard_serving, &shard_config);
    sharded = StartSharded(cmd, shard_config, "sharded");
  }

  absl::StatusOr<std::unique_ptr<ScoringModel>> model =
      LoadScoringModel(model_dir);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    StopServers(server);
    StopServers(sharded);
    return 1;
  }
  RequestShape shape;
  shape.parse = (*model)->parse;
  shape.fields = (*model)->model->fields();
  shape.dense_dim = DenseDimOf(shape.parse);
  const std::vector<std::string> pool = ExamplePool(o.m);
  std::vector<Case> cases;
  for (int size : o.sizes) {
    for (const std::string& form : o.forms) {
      Case c{size, form, Requests(pool, size, form)};
      c.batches.resize(c.requests.size());
      for (size_t k = 0; k < c.requests.size(); ++k) {
        absl::Status s = RequestToBatch(c.requests[k], shape, &c.batches[k]);
        if (!s.ok()) {
          std::fprintf(stderr, "request %zu: %s\n", k, s.ToString().c_str());
          return 1;
        }
      }
      cases.push_back(std::move(c));
    }
  }
  std::printf(
      "%s dim %d hidden %s, %zu rows, %s keys, %d clients, %.0f s runs "
      "after %.0f s warmup, %d reps\n",
      o.m.model.c_str(), o.m.dim, absl::StrJoin(o.m.hidden, "x").c_str(), rows,
      o.m.zipf ? "Zipf(1)" : "uniform", o.clients, o.seconds, o.warmup, o.reps);
  if (o.prewarm > 0 && !cases.empty()) {
    BenchOptions warm = o;
    warm.seconds = o.prewarm;
    warm.warmup = 0;
    PrintRow("prewarm", 0, RunRpc(warm, server, cases.front().requests, 0));
    if (!sharded.pids.empty()) {
      PrintRow("prewarm", 0, RunRpc(warm, sharded, cases.front().requests, 0));
    }
  }
  for (int rep = 1; rep <= o.reps; ++rep) {
    for (Case& c : cases) {
      std::printf("%s size %d form %s\n", o.m.model.c_str(), c.size,
                  c.form.c_str());
      c.rpc.push_back(RunRpc(o, server, c.requests, 0));
      PrintRow("rpc", rep, c.rpc.back());
      if (!sharded.pids.empty()) {
        c.sharded.push_back(RunRpc(o, sharded, c.requests, 0));
        PrintRow("sharded", rep, c.sharded.back());
      }
      // Each thread scores its own copy of the batches (ScoreBatch may
      // rewrite signs in place).
      std::vector<std::vector<Batch>> copies(o.clients, c.batches);
      std::vector<ScoringWorkspace> ws(o.clients);
      std::vector<std::vector<float>> probs(o.clients,
                                            std::vector<float>(c.size));
      c.limit.push_back(RunLocal(o, c.batches.size(), [&](int t, size_t k) {
        (void)ScoreBatch(**model, &copies[t][k], probs[t].data(), &ws[t]);
        return size_t(c.size);
      }));
      PrintRow("limit", rep, c.limit.back());
      RequestLimits limits;
      c.handler.push_back(RunLocal(o, c.requests.size(), [&](int, size_t k) {
        serving::PredictResponse resp;
        (void)ScoreRequest(c.requests[k], **model, limits, &resp);
        return size_t(resp.probabilities_size());
      }));
      PrintRow("handler", rep, c.handler.back());
      if (o.half) {
        // The server's count starts where the client's does, at the end
        // of the run's warmup (new connections' first calls are slow).
        HistogramBuckets before;
        std::thread scrape_after_warmup([&] {
          absl::SleepFor(absl::Seconds(o.warmup));
          before = ScrapeServerLatency(server);
        });
        c.half.push_back(RunRpc(
            o, server, c.requests,
            o.half_rate > 0 ? o.half_rate : c.rpc.back().requests_per_s / 2));
        scrape_after_warmup.join();
        const ServerTail tail =
            TailBetween(before, ScrapeServerLatency(server), 10, 0.99);
        c.half.back().server_over_10ms = tail.over;
        c.half.back().server_p99 = tail.quantile_ms;
        PrintRow("half", rep, c.half.back());
        if (!sharded.pids.empty()) {
          c.sharded_half.push_back(RunRpc(o, sharded, c.requests,
                                          c.sharded.back().requests_per_s / 2));
          PrintRow("s-half", rep, c.sharded_half.back());
        }
      }
    }
  }
  for (const Case& c : cases) Report(o, rows, c);
  StopServers(server);
  StopServers(sharded);
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) { return sampan::Main(argc, argv); }
