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
  const absl::Time now = absl::Now();
  if (examples > 0 && first_progress_ == absl::InfinitePast()) {
    first_progress_ = last_time_;
  }
  const double dt = absl::ToDoubleSeconds(now - last_time_);
  const uint64_t dn = examples - last_examples_;
  const double rate = dt > 0 ? dn / dt : 0;
  const double loss = dn > 0 ? (loss_sum - last_loss_sum_) / dn : 0;
  const double busy =
      examples > 0 ? absl::ToDoubleSeconds(now - first_progress_) : 0;
  const double eta = fraction > 0.001 ? busy * (1 - fraction) / fraction : -1;
  const std::string line = absl::StrFormat(
      "[train] %5.1f%% | %8.0f examples/s | loss %.4f | auc %.4f | "
      "%d examples | %d bad rows | eta %s",
      100 * fraction, rate, loss, examples ? auc_weighted / examples : 0.5,
      examples, bad, FormatEta(eta));
  if (tty_) {
    std::printf("\r%s\033[K", line.c_str());
    drawn_ = true;
  } else {
    std::printf("%s\n", line.c_str());
  }
  std::fflush(stdout);
  last_time_ = now;
  last_examples_ = examples;
  last_loss_sum_ = loss_sum;
}

void ProgressPrinter::Finish() {
  if (drawn_) std::printf("\n");
  drawn_ = false;
  std::fflush(stdout);
}

}  // namespace sampan
