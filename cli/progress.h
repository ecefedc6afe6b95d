// The launcher's one progress line: examples/s, recent loss, streaming AUC,
// fraction done and ETA, from the coordinator's view of the trainers. On a
// terminal the line is redrawn in place; otherwise one line per update.
#ifndef SAMPAN_CLI_PROGRESS_H_
#define SAMPAN_CLI_PROGRESS_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"

namespace sampan {

class ProgressPrinter {
 public:
  explicit ProgressPrinter(const JobConfig& config);
  // Prints the line for `status` now.
  void Update(const coord::JobStatusResponse& status);
  // The line for `status` seen at `now`; the next line's rate and loss are
  // taken over the examples trained after this one. When no example was
  // trained in between (a stall, or the end of training), the loss shown is
  // the last one measured. Once every trainer is done, the rate is the job's
  // average up to the first line that saw it done, and Update prints that
  // line once.
  std::string Render(const coord::JobStatusResponse& status, absl::Time now);
  // Ends the in-place line, if one was drawn.
  void Finish();

 private:
  static std::string StreamPart(const coord::JobStatusResponse& status,
                                absl::Time now);
  bool tty_;
  const bool words_;  // model.type WORD2VEC: lines, no AUC
  bool drawn_ = false;
  absl::Time last_time_;
  uint64_t last_examples_ = 0;
  double last_loss_sum_ = 0;
  double shown_loss_ = 0;
  absl::Time first_progress_ = absl::InfinitePast();
  absl::Time done_at_ = absl::InfiniteFuture();
  std::string last_line_;
};

}  // namespace sampan

#endif  // SAMPAN_CLI_PROGRESS_H_
