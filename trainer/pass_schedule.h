// PassSchedule: the passes a trainer trains, in order, the same on every
// rank.
//
// A batch job is one pass: data.train_files, data.epochs times. A
// data.stream job's passes appear over time (trainer/data/pass_catalog.h):
// rank 0 picks the next ready pass after the last one (by time; a pass that
// shows up after a later one was handed out is skipped with a warning, as
// late data) and puts it in the coordinator's key-value store as
// "stream/pass/<index>"; every other rank reads that key. So all ranks train
// the same files in the same order even when a pass becomes ready while
// they list the root. The stream ends after data.stream.end_pass, after
// data.stream.idle_stop_seconds without a new pass, or when stopped.
//
// Every wait is bounded: rank 0 polls every data.stream.poll_seconds, the
// others wait on the key up to cluster.wait_timeout_seconds per call, and
// both check `stop` between polls. Thread safety: Next() from one thread;
// waiting_since() and last() from any.
#ifndef SAMPAN_TRAINER_PASS_SCHEDULE_H_
#define SAMPAN_TRAINER_PASS_SCHEDULE_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/civil_time.h"
#include "coordinator/client.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"

namespace sampan {

// Whether the job reads a data.stream (rather than data.train_files).
bool IsStreamJob(const JobConfig& config);

// The config one pass trains under: data.train_files = the pass's files,
// one epoch (a batch job's pass is the config itself).
JobConfig PassConfig(const JobConfig& config, const coord::StreamPass& pass);

// Where a schedule starts: a stream resumed from a checkpoint goes on at
// pass `next_index`, after `last_pass`. The coordinator's keys are the
// trainers' collective generation's own ("stream/g<generation>/..."): a
// regrouped set of trainers hands out its passes afresh.
struct PassScheduleStart {
  uint64_t generation = 0;
  uint64_t next_index = 0;
  std::string last_pass;
};

class PassSchedule {
 public:
  // `coordinator` and `stop` (stop waiting: the trainer is failing) must
  // outlive the schedule.
  PassSchedule(const JobConfig& config, int rank,
               CoordinatorClient* coordinator, const std::atomic<bool>* stop,
               const PassScheduleStart& start = PassScheduleStart());

  // The next pass, or one with `end` set when there is none. Cancelled when
  // stopped while waiting; errors of listing the root or of the
  // coordinator otherwise.
  absl::StatusOr<coord::StreamPass> Next();

  // Since when (unix seconds) Next() waits for a pass; 0 when it does not.
  double waiting_since() const { return waiting_since_.load(); }
  // The name of the last pass handed out ("" before the first).
  std::string last() const;

 private:
  absl::StatusOr<coord::StreamPass> PickNext();  // rank 0
  absl::StatusOr<coord::StreamPass> ReadNext();  // other ranks
  // Sleeps up to `seconds`, waking early when stopped; false if stopped.
  bool Sleep(double seconds);

  const JobConfig& config_;
  const int rank_;
  CoordinatorClient* const coordinator_;
  const std::atomic<bool>* const stop_;
  const uint64_t generation_;
  uint64_t next_index_ = 0;
  std::optional<absl::CivilMinute> last_time_;
  // Every pass name a listing showed: one at or before the last pass handed
  // out that a listing shows for the first time became ready late. The
  // first listing only fills it (a resumed job's earlier passes).
  std::set<std::string> listed_;
  bool listed_once_ = false;
  std::atomic<double> waiting_since_{0};
  mutable std::mutex mu_;
  std::string last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_PASS_SCHEDULE_H_
