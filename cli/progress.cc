#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace sampan {
namespace {

std::string FormatEta(double seconds) {
  if (seconds < 0 || seconds > 360000) return "--:--";
  const int s = static_cast<int>(seconds + 0.5);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

}  // namespace

ProgressPrinter::ProgressPrinter(const JobConfig&)
    : tty_(isatty(STDOUT_FILENO)), last_time_(absl::Now()) {}

void ProgressPrinter::Update(const coord::JobStatusResponse& status) {
  const std::string line = Render(status, absl::Now());
  if (tty_) {
    std::printf("\r%s\033[K", line.c_str());
    drawn_ = true;
  } else {
    std::printf("%s\n", line.c_str());
  }
  std::fflush(stdout);
}

std::string ProgressPrinter::Render(const coord::JobStatusResponse& status,
                                    absl::Time now) {
  uint64_t examples = 0, bad = 0;
  double loss_sum = 0, auc_weighted = 0, fraction = 0;
  for (const coord::TrainerProgress& t : status.trainers()) {
    examples += t.examples();
    loss_sum += t.loss_sum();
    auc_weighted += t.train_auc() * t.examples();
    fraction += t.fraction_done();
    bad += t.bad_rows();
  }
  if (status.trainers_size() > 0) fraction /= status.trainers_size();
  if (examples > 0 && first_progress_ == absl::InfinitePast()) {
    first_progress_ = last_time_;
  }
  const double dt = absl::ToDoubleSeconds(now - last_time_);
  const uint64_t dn = examples - last_examples_;
  const double busy =
      examples > 0 ? absl::ToDoubleSeconds(now - first_progress_) : 0;
  double rate = dt > 0 ? dn / dt : 0;
  // A finished job trains nothing more: its average says more than a 0.
  if (dn == 0 && fraction >= 1 && busy > 0) rate = examples / busy;
  if (dn > 0) shown_loss_ = (loss_sum - last_loss_sum_) / dn;
  const double eta = fraction > 0.001 ? busy * (1 - fraction) / fraction : -1;
  last_time_ = now;
  last_examples_ = examples;
  last_loss_sum_ = loss_sum;
  return absl::StrFormat(
      "[train] %5.1f%% | %8.0f examples/s | loss %.4f | auc %.4f | "
      "%d examples | %d bad rows | eta %s",
      100 * fraction, rate, shown_loss_,
      examples ? auc_weighted / examples : 0.5, examples, bad, FormatEta(eta));
}

void ProgressPrinter::Finish() {
  if (drawn_) std::printf("\n");
  drawn_ = false;
  std::fflush(stdout);
}

}  // namespace sampan
