#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
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

ProgressPrinter::ProgressPrinter(const JobConfig& config)
    : tty_(isatty(STDOUT_FILENO)),
      words_(config.model().type() == WORD2VEC),
      last_time_(absl::Now()) {}

void ProgressPrinter::Update(const coord::JobStatusResponse& status) {
  const std::string line = Render(status, absl::Now());
  // A finished job's line does not change: said once.
  if (line == last_line_) return;
  last_line_ = line;
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
  // A finished job shows its average up to when it finished, on every line
  // from then on (the same line, printed once).
  if (fraction >= 1 && examples > 0) {
    if (done_at_ == absl::InfiniteFuture()) done_at_ = now;
    const double took = absl::ToDoubleSeconds(done_at_ - first_progress_);
    if (took > 0) rate = examples / took;
  }
  if (dn > 0) shown_loss_ = (loss_sum - last_loss_sum_) / dn;
  const double eta = fraction > 0.001 ? busy * (1 - fraction) / fraction : -1;
  last_time_ = now;
  last_examples_ = examples;
  last_loss_sum_ = loss_sum;
  // Word vectors train lines of text and have no AUC.
  std::string line =
      words_ ? absl::StrFormat(
                   "[train] %5.1f%% | %8.0f lines/s | loss %.4f a line | %d "
                   "lines | %d bad lines | eta %s",
                   100 * fraction, rate, shown_loss_, examples, bad,
                   FormatEta(eta))
             : absl::StrFormat(
                   "[train] %5.1f%% | %8.0f examples/s | loss %.4f | auc %.4f "
                   "| %d examples | %d bad rows | eta %s",
                   100 * fraction, rate, shown_loss_,
                   examples ? auc_weighted / examples : 0.5, examples, bad,
                   FormatEta(eta));
  if (status.trainers_size() > 0)
    absl::StrAppend(&line, StreamPart(status, now));
  if (status.coordinator_incarnations() > 1) {
    absl::StrAppend(&line, " | coordinator restarts ",
                    status.coordinator_incarnations() - 1);
  }
  const coord::FleetStatus& f = status.fleet();
  if (f.wanted() != f.size() || f.shards_to_move() > 0) {
    absl::StrAppend(&line, " | rescaling to ", f.wanted(), " pservers, ",
                    f.shards_to_move(), " shards to move");
  }
  return line;
}

// data.stream: which pass trains (rank 0 decides them), or which it waits
// for and since when, and the last pass's progressive AUC.
std::string ProgressPrinter::StreamPart(const coord::JobStatusResponse& status,
                                        absl::Time now) {
  const coord::TrainerProgress& p = status.trainers(0);
  std::string part;
  if (p.waiting_since_unix_seconds() > 0) {
    const double waited =
        absl::ToUnixMicros(now) * 1e-6 - p.waiting_since_unix_seconds();
    part = absl::StrFormat(" | waiting for the pass after %s for %.0f s",
                           p.last_pass().empty() ? "none" : p.last_pass(),
                           std::max(0.0, waited));
  } else if (!p.pass().empty()) {
    part = absl::StrFormat(" | pass %s", p.pass());
  } else {
    return "";
  }
  absl::StrAppend(&part, absl::StrFormat(" (%d done)", p.passes_done()));
  if (p.has_last_result() && p.last_result().rows_scored() > 0) {
    absl::StrAppend(&part, absl::StrFormat(" | last pass auc %.4f, v%d",
                                           p.last_result().auc(),
                                           p.last_result().version()));
  }
  return part;
}

void ProgressPrinter::Finish() {
  if (drawn_) std::printf("\n");
  drawn_ = false;
  std::fflush(stdout);
}

}  // namespace sampan
