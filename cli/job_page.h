// The live job page: what a person watching a running job wants to see,
// served by the coordinator beside its /metrics (common/metrics.h HttpPage,
// under the job's TLS and token policy) and frozen into
// <output_dir>/job.html when the coordinator exits.
//
// The coordinator already hears every member's heartbeat; JobPage folds
// each JobStatus snapshot (one a second, the coordinator's tick) into
//   - the summary: state, progress and ETA, examples, examples/s, train
//     loss and AUC, elapsed time, coordinator restarts, the fleet's rescale;
//   - charts over time (examples/s, train loss, train AUC) and, for a
//     data.stream job, per pass (progressive AUC, freshness of the version
//     published after it), drawn by trainer/chart.h;
//   - the fleet: every pserver and trainer with its address, alive or not,
//     restarts, last heartbeat, examples/s or keys/s, table rows, memory;
//   - checkpoints and model versions, with their age;
//   - events: restarts, lost heartbeats, abandoned checkpoints, failed
//     shard moves, finished trainers, published versions (newest first).
//
// Shell() is the page a browser loads: it carries no job data (so it is
// served without the token) and fetches Body() every few seconds with the
// token from the address's #token=... fragment, which browsers never send
// to a server. Frozen() is the same body with no script.
//
// The history is bounded: past `max_points` samples, every other one is
// dropped and samples are taken half as often, so a week-long job's page
// stays the size of an hour-long one's.
//
// Thread-safe: Update runs on the coordinator's tick thread, the renders on
// the metrics server's; one mutex guards the state, held while rendering.
#ifndef SAMPAN_CLI_JOB_PAGE_H_
#define SAMPAN_CLI_JOB_PAGE_H_

#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "proto/coordinator.pb.h"

namespace sampan {

class JobPage {
 public:
  struct Options {
    std::string job_name;
    double refresh_seconds = 2;
    size_t max_points = 600;
    size_t max_events = 200;
  };
  explicit JobPage(Options options);
  JobPage(const JobPage&) = delete;
  JobPage& operator=(const JobPage&) = delete;

  // Folds in a snapshot taken at `now`.
  void Update(const coord::JobStatusResponse& status, absl::Time now);

  // The live page, the current body (what the live page shows), and the
  // page with that body and no script.
  std::string Shell() const;
  std::string Body() const;
  std::string Frozen() const;

 private:
  struct Sample {
    double t = 0;  // seconds since the first snapshot
    double examples_per_second = 0;
    double loss = 0;  // mean over the examples since the previous sample
    double auc = 0;   // train AUC, weighted by examples
  };
  struct Rate {
    double t = 0;
    uint64_t count = 0;
  };

  void Events(const coord::JobStatusResponse& now, double t);
  void Event(double t, const std::string& text);
  void Sampled(const coord::JobStatusResponse& status, double t);
  void Rates(const coord::JobStatusResponse& status, double t);
  std::string BodyLocked() const;
  std::string SummaryHtml() const;
  std::string ChartsHtml() const;
  std::string FleetHtml() const;
  std::string VersionsHtml() const;
  std::string EventsHtml() const;

  const Options options_;
  mutable std::mutex mu_;
  bool have_ = false;
  absl::Time first_;
  coord::JobStatusResponse last_;  // the newest snapshot
  double last_t_ = 0;
  // Charted history: a sample every `stride_` snapshots.
  std::vector<Sample> samples_;
  size_t stride_ = 1, skipped_ = 0;
  double sample_t_ = 0;  // the last sample's snapshot
  uint64_t sample_examples_ = 0;
  double sample_loss_sum_ = 0;
  // ETA: fraction done at the first snapshot that trained anything.
  double eta_t0_ = -1, eta_f0_ = 0;
  // Per-member rates over at least 5 s: (role, index) -> counter then.
  std::map<std::pair<int, int>, Rate> rate_base_;
  std::map<std::pair<int, int>, double> rates_;
  std::map<uint64_t, coord::PassResult> passes_;       // by pass index
  std::deque<std::pair<double, std::string>> events_;  // newest first
};

}  // namespace sampan

#endif  // SAMPAN_CLI_JOB_PAGE_H_
