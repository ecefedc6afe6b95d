#include "trainer/rank_checkpoint.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"

namespace sampan {

std::string WindowNote(const coord::DataPosition& p) {
  if (p.window_skip() == 0) return "";
  return absl::StrCat(" (+", p.window_skip(), " rows of its shuffle window)");
}

RankCheckpoints::RankCheckpoints(const RankCheckpointOptions& options)
    : options_(options),
      timeout_(
          absl::Seconds(options.config->checkpoint().timeout_seconds() +
                        2 * options.config->cluster().rpc_deadline_seconds())) {
}

absl::StatusOr<coord::CheckpointArriveResponse> RankCheckpoints::Arrive(
    const coord::CheckpointArriveRequest& request) {
  return options_.coordinator->CheckpointArrive(request, timeout_);
}

absl::Status RankCheckpoints::SaveDense(uint64_t steps,
                                        coord::CheckpointArriveRequest* req) {
  if (!options_.dense->lockstep() || options_.rank != 0)
    return absl::OkStatus();
  absl::StatusOr<std::string> path = options_.dense->SaveForCheckpoint(steps);
  if (!path.ok()) return path.status();
  req->set_dense_saved(true);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RankCheckpoints::ArriveMidPass(
    uint64_t epoch, bool missed, const coord::DataPosition& position) {
  const int rank = options_.rank;
  coord::CheckpointArriveRequest req;
  req.set_epoch(epoch);
  req.set_missed(missed);
  *req.mutable_position() = position;
  if (!missed) {
    if (absl::Status s = SaveDense(position.steps(), &req); !s.ok()) return s;
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<coord::CheckpointArriveResponse> resp = Arrive(req);
  if (!resp.ok()) {
    SAMPAN_LOG(WARNING) << "trainer " << rank << ": checkpoint at step "
                        << position.steps() << ": " << resp.status().message();
    return epoch;
  }
  const coord::DataPosition& p = req.position();
  SAMPAN_LOG(INFO) << "trainer " << rank << ": checkpoint " << resp->epoch()
                   << (resp->completed() ? " taken" : " abandoned (")
                   << (resp->completed() ? "" : resp->reason() + ")")
                   << " at step " << p.steps() << ", file " << p.file_index()
                   << " offset " << p.byte_offset() << WindowNote(p)
                   << ", paused " << absl::FormatDuration(absl::Now() - start);
  return resp->epoch();
}

void RankCheckpoints::ArriveFinished(coord::DataPosition position) {
  coord::CheckpointArriveRequest req;
  position.set_finished(true);
  *req.mutable_position() = position;
  absl::StatusOr<coord::CheckpointArriveResponse> resp = Arrive(req);
  if (!resp.ok()) {
    SAMPAN_LOG(WARNING) << "trainer " << options_.rank
                        << ": reporting the end of input for checkpoints: "
                        << resp.status().message();
  }
}

void RankCheckpoints::ArriveAtPassEnd(const coord::StreamPass& pass,
                                      uint64_t rows, uint64_t steps) {
  const int rank = options_.rank;
  coord::CheckpointArriveRequest req;
  coord::DataPosition* p = req.mutable_position();
  p->set_rank(rank);
  p->set_pass_index(pass.index() + 1);
  p->set_pass_name(pass.name());
  p->set_steps(steps);
  p->set_rows(rows);
  if (absl::Status s = SaveDense(steps, &req); !s.ok()) {
    SAMPAN_LOG(WARNING) << "trainer 0: checkpoint after pass " << pass.name()
                        << ": " << s.message();
    return;
  }
  absl::StatusOr<coord::CheckpointArriveResponse> resp = Arrive(req);
  if (!resp.ok() || !resp->completed()) {
    SAMPAN_LOG(WARNING) << "trainer " << rank << ": checkpoint after pass "
                        << pass.name() << " not taken: "
                        << (resp.ok() ? resp->reason()
                                      : std::string(resp.status().message()));
    return;
  }
  SAMPAN_LOG(INFO) << "trainer " << rank << ": checkpoint " << resp->epoch()
                   << " taken after pass " << pass.name();
}

}  // namespace sampan
