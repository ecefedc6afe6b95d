#include "trainer/early_stop.h"

#include <fstream>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "trainer/pass_score.h"

namespace sampan {
namespace {

constexpr absl::Duration kSlice = absl::Seconds(1);

std::string ScoreKey(uint32_t epoch, int rank) {
  return absl::StrCat("validation/", epoch, "/", rank);
}

// A wait that is still waiting: its slice ended, or the coordinator is
// restarting (the trainer's heartbeat gives up on a lost one).
bool StillWaiting(const absl::Status& s) {
  return absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s);
}

}  // namespace

EarlyStop::EarlyStop(EarlyStopOptions options)
    : o_(std::move(options)),
      trainers_(static_cast<int>(o_.config->cluster().num_trainers())) {}

std::string EarlyStop::DecisionKey(uint32_t epoch) {
  return absl::StrCat("validation/", epoch);
}

absl::Status EarlyStop::IdleWait(
    const std::string& what,
    const std::function<absl::Status(absl::Duration)>& attempt) {
  const absl::Duration dead_limit =
      absl::Seconds(o_.config->cluster().wait_timeout_seconds());
  std::map<int, absl::Time> dead_since;  // trainers without a heartbeat
  while (true) {
    absl::Status s = attempt(kSlice);
    if (!StillWaiting(s)) return s;
    if (o_.failed != nullptr && o_.failed->load()) {
      return absl::AbortedError(
          absl::StrCat(what, ": the trainer failed while it waited"));
    }
    if (absl::Status i = o_.idle(); !i.ok()) return i;
    absl::StatusOr<coord::JobStatusResponse> job = o_.coordinator->JobStatus();
    if (!job.ok()) continue;  // restarting: the heartbeat judges that
    const absl::Time now = absl::Now();
    std::vector<bool> alive(trainers_, false);
    for (const coord::Member& m : job->spec().trainers()) {
      if (m.index() >= 0 && m.index() < trainers_) alive[m.index()] = m.alive();
    }
    for (int r = 0; r < trainers_; ++r) {
      if (alive[r]) {
        dead_since.erase(r);
        continue;
      }
      const absl::Time since = dead_since.emplace(r, now).first->second;
      if (now - since > dead_limit) {
        return absl::DeadlineExceededError(
            absl::StrCat(what, ": trainer ", r, " has sent no heartbeat for ",
                         absl::FormatDuration(now - since),
                         " (cluster.wait_timeout_seconds)"));
      }
    }
  }
}

absl::StatusOr<coord::EpochValidation> EarlyStop::ReadDecision(uint32_t epoch,
                                                               bool wait) {
  std::string value;
  absl::Status s;
  if (wait) {
    s = IdleWait(absl::StrCat("the validation decision of epoch ", epoch + 1),
                 [&](absl::Duration slice) {
                   absl::StatusOr<std::string> v = o_.coordinator->KvGet(
                       DecisionKey(epoch), /*wait=*/true, slice);
                   if (v.ok()) value = *v;
                   return v.status();
                 });
  } else {
    absl::StatusOr<std::string> v = o_.coordinator->KvGet(
        DecisionKey(epoch), /*wait=*/false, absl::ZeroDuration());
    if (v.ok()) value = *v;
    s = v.status();
  }
  if (!s.ok()) return s;
  coord::EpochValidation d;
  if (!d.ParseFromString(value)) {
    return absl::DataLossError(absl::StrCat(
        "coordinator key ", DecisionKey(epoch), " is not an EpochValidation"));
  }
  return d;
}

absl::StatusOr<coord::EpochValidation> EarlyStop::Decide(uint32_t epoch) {
  std::vector<coord::PassScore> scores(trainers_);
  for (int r = 0; r < trainers_; ++r) {
    absl::Status s = IdleWait(
        absl::StrCat("trainer ", r, "'s validation score of epoch ", epoch + 1),
        [&](absl::Duration slice) {
          absl::StatusOr<std::string> v =
              o_.coordinator->KvGet(ScoreKey(epoch, r), /*wait=*/true, slice);
          if (v.ok() && !scores[r].ParseFromString(*v)) {
            return absl::DataLossError(absl::StrCat(
                "coordinator key ", ScoreKey(epoch, r), " is not a PassScore"));
          }
          return v.status();
        });
    if (!s.ok()) return s;
  }
  const coord::PassResult merged = MergePassScores(scores);
  coord::EpochValidation d;
  d.set_epoch(epoch);
  d.set_auc(merged.auc());
  d.set_logloss(merged.logloss());
  d.set_rows(merged.rows_scored());
  std::string before = "";
  if (epoch > 0) {
    absl::StatusOr<coord::EpochValidation> prev =
        ReadDecision(epoch - 1, /*wait=*/false);
    if (prev.ok()) {
      d.set_stop(d.auc() <= prev->auc());
      before = absl::StrFormat(" (epoch %d: %.4f)", epoch, prev->auc());
    } else {
      // E.g. a `--resume` whose coordinator kept no key-value store.
      before = absl::StrCat(" (epoch ", epoch,
                            "'s is unknown: ", prev.status().message(), ")");
    }
  }
  SAMPAN_LOG(INFO) << absl::StrFormat(
      "epoch %d: validation AUC %.4f logloss %.4f on %d rows%s; %s", epoch + 1,
      d.auc(), d.logloss(), d.rows(), before,
      d.stop() ? "stopping early" : "training on");
  if (absl::Status s =
          o_.coordinator->KvPut(DecisionKey(epoch), d.SerializeAsString());
      !s.ok()) {
    return s;
  }
  return d;
}

absl::StatusOr<coord::EpochValidation> EarlyStop::EndEpoch(uint32_t epoch) {
  const std::string barrier = absl::StrCat("validate-", epoch);
  absl::Status s = IdleWait(
      absl::StrCat("barrier '", barrier, "'"), [&](absl::Duration slice) {
        return o_.coordinator->Barrier(barrier, trainers_, o_.rank, slice);
      });
  if (!s.ok()) return s;
  // Decided already: this rank repeats an epoch after a restart.
  absl::StatusOr<coord::EpochValidation> decided =
      ReadDecision(epoch, /*wait=*/false);
  if (decided.ok() || !absl::IsNotFound(decided.status())) return decided;
  const absl::Time start = absl::Now();
  absl::StatusOr<coord::PassScore> score = o_.score();
  if (!score.ok()) return score.status();
  SAMPAN_LOG(INFO) << "trainer " << o_.rank << ": scored " << score->rows()
                   << " validation rows after epoch " << epoch + 1 << " in "
                   << absl::FormatDuration(absl::Now() - start);
  s = o_.coordinator->KvPut(ScoreKey(epoch, o_.rank),
                            score->SerializeAsString());
  if (!s.ok()) return s;
  if (o_.rank == 0) return Decide(epoch);
  return ReadDecision(epoch, /*wait=*/true);
}

absl::Status EarlyStop::AppendResult(const std::string& path) {
  std::string aucs;
  uint32_t epochs = 0;
  bool stopped = false;
  for (uint32_t e = 0; e < o_.config->data().epochs() && !stopped; ++e) {
    absl::StatusOr<coord::EpochValidation> d = ReadDecision(e, /*wait=*/false);
    if (absl::IsNotFound(d.status())) break;
    if (!d.ok()) return d.status();
    absl::StrAppendFormat(&aucs, "%s%.6f", aucs.empty() ? "" : ",", d->auc());
    epochs = e + 1;
    stopped = d->stop() && epochs < o_.config->data().epochs();
  }
  // A `--resume` past its last epoch decided nothing in this launch.
  if (epochs == 0) return absl::OkStatus();
  std::ofstream out(path, std::ios::app);
  out << "validation_auc=" << aucs << "\nepochs_trained=" << epochs
      << "\nstopped_early=" << (stopped ? 1 : 0) << "\n";
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace sampan
