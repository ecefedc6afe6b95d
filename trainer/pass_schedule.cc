#include "trainer/pass_schedule.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/pass_pattern.h"
#include "trainer/data/pass_catalog.h"

namespace sampan {
namespace {

std::string PassKey(uint64_t generation, uint64_t index) {
  return absl::StrCat("stream/g", generation, "/pass/", index);
}

double NowSeconds() { return absl::ToUnixMicros(absl::Now()) * 1e-6; }

}  // namespace

bool IsStreamJob(const JobConfig& config) {
  return !config.data().stream().root().empty();
}

JobConfig PassConfig(const JobConfig& config, const coord::StreamPass& pass) {
  if (!IsStreamJob(config)) return config;
  JobConfig c = config;
  DataConfig* d = c.mutable_data();
  d->clear_train_files();
  for (const std::string& f : pass.files()) d->add_train_files(f);
  d->set_epochs(1);
  d->mutable_synthetic()->set_rows(0);
  return c;
}

PassSchedule::PassSchedule(const JobConfig& config, int rank,
                           CoordinatorClient* coordinator,
                           const std::atomic<bool>* stop,
                           const PassScheduleStart& start)
    : config_(config),
      rank_(rank),
      coordinator_(coordinator),
      stop_(stop),
      generation_(start.generation),
      next_index_(start.next_index),
      last_(start.last_pass) {
  if (start.last_pass.empty()) return;
  absl::StatusOr<PassPattern> pattern =
      PassPattern::Compile(config.data().stream().pattern());
  if (!pattern.ok()) return;  // validated: cannot happen
  if (std::optional<PassTime> t = pattern->Match(start.last_pass)) {
    last_time_ = t->time;
  }
}

std::string PassSchedule::last() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

bool PassSchedule::Sleep(double seconds) {
  const absl::Time until = absl::Now() + absl::Seconds(seconds);
  while (absl::Now() < until) {
    if (stop_->load()) return false;
    absl::SleepFor(std::min(absl::Milliseconds(100), until - absl::Now()));
  }
  return !stop_->load();
}

absl::StatusOr<coord::StreamPass> PassSchedule::Next() {
  coord::StreamPass pass;
  if (!IsStreamJob(config_)) {
    // A batch job: its one pass, then the end.
    pass.set_index(next_index_);
    if (next_index_++ > 0) {
      pass.set_end(true);
      return pass;
    }
    pass.set_first(true);
    for (const std::string& f : config_.data().train_files()) {
      pass.add_files(f);
    }
    return pass;
  }
  absl::StatusOr<coord::StreamPass> next = rank_ == 0 ? PickNext() : ReadNext();
  waiting_since_.store(0);
  if (!next.ok()) return next.status();
  ++next_index_;
  if (!next->end()) {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = next->name();
  }
  return next;
}

absl::StatusOr<coord::StreamPass> PassSchedule::PickNext() {
  const StreamConfig& s = config_.data().stream();
  const double started = NowSeconds();
  coord::StreamPass pass;
  pass.set_index(next_index_);
  const std::string last = this->last();
  const bool at_end = !s.end_pass().empty() && last == s.end_pass();
  while (!at_end) {
    absl::StatusOr<std::vector<ReadyPass>> ready = ListReadyPasses(s);
    if (!ready.ok()) return ready.status();
    for (const ReadyPass& p : *ready) {
      const bool first_seen = listed_.insert(p.name).second;
      if (!last_time_.has_value() || p.time.time > *last_time_) {
        pass.set_name(p.name);
        pass.set_day(p.time.day);
        for (const std::string& f : p.files) pass.add_files(f);
        pass.set_ready_unix_seconds(p.ready_unix_seconds);
        pass.set_first(next_index_ == 0);
        last_time_ = p.time.time;
        break;
      }
      if (first_seen && listed_once_) {
        SAMPAN_LOG(WARNING) << "pass " << p.name << " became ready after "
                            << last << " was handed out: skipped (late)";
      }
    }
    // Passes after the one picked are listed again next time.
    for (const ReadyPass& p : *ready) {
      if (last_time_.has_value() && p.time.time > *last_time_) {
        listed_.erase(p.name);
      }
    }
    listed_once_ = true;
    if (!pass.name().empty()) break;
    if (s.idle_stop_seconds() > 0 &&
        NowSeconds() - started >= s.idle_stop_seconds()) {
      SAMPAN_LOG(INFO) << "no pass after " << (last.empty() ? "none" : last)
                       << " for " << s.idle_stop_seconds()
                       << " s (data.stream.idle_stop_seconds): the stream "
                          "ends";
      break;
    }
    if (waiting_since_.load() == 0) {
      waiting_since_.store(started);
      SAMPAN_LOG(INFO) << "waiting for a pass after "
                       << (last.empty() ? "none" : last) << " under "
                       << s.root();
    }
    double sleep = s.poll_seconds();
    if (s.idle_stop_seconds() > 0) {
      sleep = std::min(sleep, std::max(0.05, s.idle_stop_seconds() -
                                                 (NowSeconds() - started)));
    }
    if (!Sleep(sleep)) return absl::CancelledError("stopped");
  }
  if (pass.name().empty()) pass.set_end(true);
  if (absl::Status put = coordinator_->KvPut(PassKey(generation_, pass.index()),
                                             pass.SerializeAsString());
      !put.ok()) {
    return put;
  }
  return pass;
}

absl::StatusOr<coord::StreamPass> PassSchedule::ReadNext() {
  const std::string key = PassKey(generation_, next_index_);
  const double started = NowSeconds();
  while (true) {
    if (stop_->load()) return absl::CancelledError("stopped");
    absl::StatusOr<std::string> value =
        coordinator_->KvGet(key, /*wait=*/true, absl::Seconds(1));
    if (value.ok()) {
      coord::StreamPass pass;
      if (!pass.ParseFromString(*value) || pass.index() != next_index_) {
        return absl::DataLossError(absl::StrCat("coordinator key ", key,
                                                " is not pass ", next_index_));
      }
      return pass;
    }
    if (!absl::IsDeadlineExceeded(value.status())) return value.status();
    if (waiting_since_.load() == 0) waiting_since_.store(started);
  }
}

}  // namespace sampan
