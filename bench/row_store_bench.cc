// The serving store's read path alone (serving/row_store.h), without gRPC or
// the model: the keys of bench/serving_bench's requests (the same model
// directory, the same Zipf or uniform example pool, each request's distinct
// signs) looked up through one View, one thread, request after request.
//
// Prints the store's open and load time (a kept store reopens without
// loading), then per pass over the requests: microseconds per key and per
// request (p50, p99), the hot tier's share of the keys, and the process's
// RSS against the budget (VmRSS, of which RssAnon and RssFile). The first
// pass starts with an empty hot tier; later ones show the steady state.
//
// Usage: row_store_bench --rows=5000000 --budget_mb=85 [--dir=D]
//   [--store_dir=D/store-ROWS] [--size=100] [--passes=3] [--dist=zipf]
//   [--requests=2000] [--model=DEEPFM]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/serving_bench_model.h"
#include "common/flags.h"
#include "serving/request_batch.h"
#include "serving/row_store.h"
#include "trainer/batch_keys.h"
#include "trainer/data_options.h"
#include "trainer/model_version.h"
#include "trainer/scoring.h"

namespace sampan {
namespace {

std::string Rss() {
  return absl::StrCat("RSS ", int(ProcStatusMb(0, "VmRSS")), " MB (anon ",
                      int(ProcStatusMb(0, "RssAnon")), ", file ",
                      int(ProcStatusMb(0, "RssFile")), ")");
}

// CPU seconds of the calling thread: on shared cores, wall time measures
// the other work too.
double ThreadCpu() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, size_t(q * v.size()));
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

int Main(int argc, char** argv) {
  absl::StatusOr<Flags> f =
      Flags::Parse(argc, argv, 1,
                   {"rows", "budget_mb", "dir", "store_dir", "size", "passes",
                    "dist", "requests", "model", "pool"});
  if (!f.ok()) {
    std::fprintf(stderr, "%s\n", f.status().ToString().c_str());
    return 2;
  }
  auto num = [&](const char* name, double def) {
    return NumberFlag(*f, name, def);
  };
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  BenchModelOptions m;
  m.model = f->Get("model", m.model);
  m.rows = int64_t(num("rows", 1000000));
  m.zipf = f->Get("dist", "zipf") != "uniform";
  m.pool = int(num("pool", m.pool));
  const std::string dir = f->Get("dir", "/tmp/sampan-serving-bench");
  const std::string model_dir =
      absl::StrCat(dir, "/model-", m.model, "-", m.rows);
  WriteBenchModel(m, model_dir);
  const int size = int(num("size", 100));
  const int passes = int(num("passes", 3));
  const size_t max_requests = size_t(num("requests", 2000));

  // Each request's distinct signs, as ScoreBatch looks them up.
  JobConfig config;
  absl::StatusOr<ModelManifest> manifest =
      ReadModelManifest(model_dir, &config);
  if (!manifest.ok()) {
    std::fprintf(stderr, "%s\n", manifest.status().ToString().c_str());
    return 1;
  }
  RequestShape shape;
  shape.parse = ParseOptionsFromJob(config);
  shape.dense_dim = DenseDimOf(shape.parse);
  std::vector<std::vector<uint64_t>> requests;
  {
    std::vector<serving::PredictRequest> reqs =
        Requests(ExamplePool(m), size, "examples");
    BatchKeys keys;
    Batch batch;
    for (size_t k = 0; k < reqs.size() && k < max_requests; ++k) {
      absl::Status s = RequestToBatch(reqs[k], shape, &batch);
      if (!s.ok()) {
        std::fprintf(stderr, "request %zu: %s\n", k, s.ToString().c_str());
        return 1;
      }
      keys.Dedup(batch);
      requests.push_back(keys.keys);
    }
  }

  VersionStoreOptions o;
  o.dir = f->Get("store_dir", absl::StrCat(dir, "/store-", m.rows));
  o.memory_budget_bytes = uint64_t(num("budget_mb", 256)) << 20;
  std::printf("%s, %zu requests of %d examples, budget %lu MB; before: %s\n",
              model_dir.c_str(), requests.size(), size,
              o.memory_budget_bytes >> 20, Rss().c_str());
  absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<VersionStore>> store = VersionStore::Open(o);
  absl::StatusOr<std::vector<ChainMember>> chain = ResolveChain(model_dir);
  if (!store.ok() || !chain.ok()) {
    std::fprintf(stderr, "%s %s\n", store.status().ToString().c_str(),
                 chain.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<std::shared_ptr<const RowSource>> view =
      (*store)->Bring(*chain);
  if (!view.ok()) {
    std::fprintf(stderr, "%s\n", view.status().ToString().c_str());
    return 1;
  }
  std::printf("store %s open and loaded in %.1f s; %s\n", o.dir.c_str(),
              absl::ToDoubleSeconds(absl::Now() - start), Rss().c_str());

  const int d = (*view)->row_dim();
  std::vector<float> rows;
  std::vector<uint8_t> found;
  for (int pass = 1; pass <= passes; ++pass) {
    const VersionStore::Stats before = (*store)->stats();
    std::vector<double> ms;
    size_t keys = 0, hits = 0;
    start = absl::Now();
    const double cpu0 = ThreadCpu();
    for (const std::vector<uint64_t>& req : requests) {
      rows.resize(req.size() * d);
      found.resize(req.size());
      const absl::Time t0 = absl::Now();
      absl::Status s = (*view)->Lookup(req, rows.data(), found.data());
      ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
      keys += req.size();
      hits += std::count(found.begin(), found.end(), 1);
    }
    const double secs = absl::ToDoubleSeconds(absl::Now() - start);
    const double cpu = ThreadCpu() - cpu0;
    const VersionStore::Stats after = (*store)->stats();
    const uint64_t hot = after.hot_hits - before.hot_hits;
    const uint64_t cold = after.hot_misses - before.hot_misses;
    std::printf(
        "pass %d: %.2f us/key (CPU %.2f), request p50 %.3f ms p99 %.3f ms "
        "(%.0f keys "
        "each); rows found %.4f; hot tier %.3f of keys (%lu rows, %.1f MB); "
        "store memory %.1f MB; %s\n",
        pass, secs * 1e6 / keys, cpu * 1e6 / keys, Percentile(ms, 0.5),
        Percentile(ms, 0.99), double(keys) / requests.size(),
        double(hits) / keys, hot + cold > 0 ? double(hot) / (hot + cold) : 0.0,
        after.hot_rows, after.hot_bytes / 1048576.0,
        after.memory_bytes / 1048576.0, Rss().c_str());
  }
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) { return sampan::Main(argc, argv); }
