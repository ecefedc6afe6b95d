// A trainer rank's heartbeat: every interval, on its own thread, it sends
// the coordinator the rank's progress and hands back what the coordinator
// answered (checkpoint rounds announced or waiting).
//
// Promises: a coordinator that answers NOT_FOUND (restarted, it has
// forgotten the rank) gets a Register, then the same heartbeat again; one
// unreachable for longer than `timeout` is reported once to `lost` and the
// beats end (training needs no coordinator, so `timeout` is as long as the
// job's barriers wait). Each send is one RPC under the client's deadline,
// so Stop returns within about one deadline.
//
// Thread-safe: Start and Stop from the owner's thread; SendNow from any
// thread (after Stop, for the last word). `fill`, `answered` and `lost`
// run on the heartbeat's thread or SendNow's caller, and do their own
// locking.
#ifndef SAMPAN_TRAINER_RANK_HEARTBEAT_H_
#define SAMPAN_TRAINER_RANK_HEARTBEAT_H_

#include <functional>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "coordinator/client.h"
#include "proto/coordinator.pb.h"

namespace sampan {

struct RankHeartbeatOptions {
  CoordinatorClient* coordinator = nullptr;  // not owned; outlives the beat
  int rank = 0;
  absl::Duration interval = absl::Seconds(1);
  absl::Duration timeout = absl::Seconds(60);
  // Fills the progress a heartbeat carries.
  std::function<void(coord::TrainerProgress*)> fill;
  // What the coordinator answered to a heartbeat.
  std::function<void(const coord::HeartbeatResponse&)> answered;
  // The coordinator was unreachable for longer than `timeout`.
  std::function<void(const absl::Status&)> lost;
};

class RankHeartbeat {
 public:
  explicit RankHeartbeat(RankHeartbeatOptions options)
      : options_(std::move(options)) {}
  ~RankHeartbeat() { Stop(); }

  RankHeartbeat(const RankHeartbeat&) = delete;
  RankHeartbeat& operator=(const RankHeartbeat&) = delete;

  void Start();
  // Ends the beats and joins their thread; idempotent.
  void Stop();
  // One heartbeat now (re-registering on NOT_FOUND).
  absl::Status SendNow();

 private:
  void Loop();

  const RankHeartbeatOptions options_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_RANK_HEARTBEAT_H_
