#include "trainer/rank_heartbeat.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"

namespace sampan {

void RankHeartbeat::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void RankHeartbeat::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void RankHeartbeat::Loop() {
  absl::Time last_ok = absl::Now();
  while (!stop_.WaitForNotificationWithTimeout(options_.interval)) {
    if (SendNow().ok()) {
      last_ok = absl::Now();
    } else if (absl::Now() - last_ok > options_.timeout) {
      options_.lost(absl::UnavailableError(absl::StrCat(
          "coordinator ", options_.coordinator->address(), " unreachable for ",
          absl::FormatDuration(absl::Now() - last_ok))));
      return;
    }
  }
}

absl::Status RankHeartbeat::SendNow() {
  coord::HeartbeatRequest req;
  req.set_role(coord::TRAINER);
  req.set_index(options_.rank);
  options_.fill(req.mutable_progress());
  coord::HeartbeatResponse resp;
  CoordinatorClient* coordinator = options_.coordinator;
  absl::Status s = coordinator->Heartbeat(req, &resp);
  if (absl::IsNotFound(s)) {
    // Our writer id stays ours; the new one it issues goes unused.
    SAMPAN_LOG(INFO) << "trainer " << options_.rank
                     << ": the coordinator does not know us (restarted?); "
                        "registering again";
    s = coordinator->Register(coord::TRAINER, options_.rank, "");
    if (s.ok()) s = coordinator->Heartbeat(req, &resp);
  }
  if (s.ok()) options_.answered(resp);
  return s;
}

}  // namespace sampan
