// Job-level Prometheus metrics, served by the coordinator process.
//
// The coordinator already hears every trainer's progress in its heartbeats;
// JobMetrics turns each JobStatus snapshot into gauges and counters in
// MetricsRegistry(), so operators see examples, throughput, loss, train AUC
// and membership per job without any trainer-side code:
//   sampan_job_examples_total{rank}        examples trained (counter)
//   sampan_job_examples_per_second         job throughput between updates
//   sampan_job_train_loss{rank}            mean log loss since the last update
//   sampan_job_train_auc{rank}             streaming train AUC
//   sampan_job_fraction_done{rank}         share of the rank's input consumed
//   sampan_job_bad_rows_total{rank}        malformed rows skipped (counter)
//   sampan_job_trainers_finished           ranks that reported completion
//   sampan_job_members{role}, sampan_job_members_alive{role}
//   sampan_job_elapsed_seconds             since the coordinator started
//   sampan_job_coordinator_restarts        coordinators of this launch
//                                          started after the first
// Not thread-safe: one thread (the coordinator's tick) calls Update.
#ifndef SAMPAN_CLI_JOB_METRICS_H_
#define SAMPAN_CLI_JOB_METRICS_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "proto/coordinator.pb.h"

namespace sampan {

class JobMetrics {
 public:
  // Registers the families in MetricsRegistry(); create at most one.
  JobMetrics();
  JobMetrics(const JobMetrics&) = delete;
  JobMetrics& operator=(const JobMetrics&) = delete;

  // Folds one snapshot in; `now` times the throughput gauge.
  void Update(const coord::JobStatusResponse& status, absl::Time now);

 private:
  struct Rank {
    prometheus::Counter* examples;
    prometheus::Counter* bad_rows;
    prometheus::Gauge* loss;
    prometheus::Gauge* auc;
    prometheus::Gauge* fraction;
    uint64_t last_examples = 0;
    uint64_t last_bad_rows = 0;
    double last_loss_sum = 0;
  };
  Rank& RankAt(int rank);

  prometheus::Family<prometheus::Counter>& examples_;
  prometheus::Family<prometheus::Counter>& bad_rows_;
  prometheus::Family<prometheus::Gauge>& loss_;
  prometheus::Family<prometheus::Gauge>& auc_;
  prometheus::Family<prometheus::Gauge>& fraction_;
  prometheus::Family<prometheus::Gauge>& members_;
  prometheus::Family<prometheus::Gauge>& alive_;
  prometheus::Gauge& rate_;
  prometheus::Gauge& finished_;
  prometheus::Gauge& elapsed_;
  // data.stream, from rank 0's progress.
  prometheus::Gauge& passes_done_;
  prometheus::Gauge& pass_waiting_;
  prometheus::Gauge& pass_auc_;
  prometheus::Gauge& pass_logloss_;
  prometheus::Gauge& pass_copc_;
  prometheus::Gauge& version_;
  prometheus::Gauge& freshness_;
  prometheus::Gauge& shard_map_version_;
  prometheus::Gauge& coordinator_restarts_;
  // The elastic fleet (coordinator/fleet.h).
  prometheus::Family<prometheus::Gauge>& fleet_;
  prometheus::Gauge& fleet_size_;
  prometheus::Gauge& fleet_wanted_;
  prometheus::Gauge& shards_to_move_;
  prometheus::Gauge& shards_moved_;
  prometheus::Gauge& rows_moved_;
  std::vector<Rank> ranks_;
  uint64_t last_total_ = 0;
  absl::Time last_time_ = absl::InfinitePast();
};

}  // namespace sampan

#endif  // SAMPAN_CLI_JOB_METRICS_H_
