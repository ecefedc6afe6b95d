// The model versions a server answers from: one immutable ServedModel at a
// time, replaced atomically when a newer version is published.
//
// Promises: Current() returns one complete, verified version (every file
// checked against its VERSION by ReadModel) or null before the first one
// loaded; a caller that holds it keeps it, whole, however many swaps happen
// meanwhile. A version that fails to load (corrupt, half-written, missing a
// file, another model's shape) is logged and counted and never served; the
// previous one goes on serving. Thread-safe.
#ifndef SAMPAN_SERVING_MODEL_FOLLOWER_H_
#define SAMPAN_SERVING_MODEL_FOLLOWER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "trainer/scoring.h"

namespace sampan {

// One model version as it is served; immutable.
struct ServedModel {
  // Its network, dense weights and rows (in memory, or read through
  // scoring->rows, which this ServedModel keeps alive).
  std::unique_ptr<ScoringModel> scoring;
  // Its sparse rows (RowSource::row_count; 0 where unknown).
  uint64_t rows = 0;
  // The version number and pass; 0 and "" for an exported model directory.
  uint64_t version = 0;
  std::string pass;
  // Its VERSION's created_unix_seconds; 0 for an exported model.
  double created_unix_seconds = 0;
  // DescribeModel's words, for logs.
  std::string description;
};

struct FollowOptions {
  // A versions root (followed: its LATEST, or `version`), or a version or
  // exported model directory (served as it is).
  std::string model;
  // With a versions root: serve this version only; 0 = follow LATEST.
  uint64_t version = 0;
  // Between checks of LATEST (and retries of a first load that failed).
  absl::Duration poll = absl::Seconds(5);
  // Where a version's rows are kept. Null: read into memory with the rest
  // (ReadModel). Else called with the version's chain (ResolveChain) to
  // bring its rows elsewhere (serving/row_store.h), and only the newest
  // member's job.pbtxt, MODEL and dense.bin are read here; its error
  // refuses the version. Called from one thread at a time.
  std::function<absl::StatusOr<std::shared_ptr<const RowSource>>(
      const std::vector<ChainMember>& chain)>
      bring_rows;
  // Called when a version whose rows bring_rows brought is refused after
  // all (another model), so that it is not built on.
  std::function<void()> forget_rows;
  // With a versions root: the version to serve now, instead of LATEST (a
  // front end: the newest version every lookup shard holds). Unavailable
  // (a shard unreachable) keeps the version served, is retried at the next
  // check and is not counted as a refused version; so is an Unavailable
  // error of bring_rows.
  std::function<absl::StatusOr<uint64_t>()> wanted;
  // Called with every load's outcome (metrics): OK after a swap, the error
  // of a refused version.
  std::function<void(const absl::Status&, const ServedModel*)> on_load;
  // Called about every second while following, with the version served
  // (null before one loaded): gauges such as its age.
  std::function<void(const ServedModel*)> on_tick;
};

class ModelFollower {
 public:
  explicit ModelFollower(FollowOptions options);
  ModelFollower(const ModelFollower&) = delete;
  ModelFollower& operator=(const ModelFollower&) = delete;
  // Stops the poller.
  ~ModelFollower();

  // The version served now; null before one loaded.
  std::shared_ptr<const ServedModel> Current() const;

  // Checks the model path once now: loads and swaps in a version newer than
  // the one served (or the first). OK when one was swapped in or nothing
  // changed; the load's error when a version was refused (which is then
  // retried only once LATEST names another, or after 10 more checks).
  absl::Status Refresh();

  // Starts a thread that calls Refresh every options.poll until Stop; a
  // fixed directory is loaded until it loads once. Stop returns within about
  // a second even during a wait (a load in progress finishes first).
  void Start();
  void Stop();

 private:
  // Which version the path names now: `*fixed` for a directory served as it
  // is; else the number to serve (0: nothing published yet).
  absl::StatusOr<uint64_t> Wanted(bool* fixed) const;
  // Reads the model at `dir` (rows through options_.bring_rows when set).
  absl::StatusOr<std::shared_ptr<const ServedModel>> Load(
      const std::string& dir) const;
  void Loop();

  const FollowOptions options_;
  mutable std::mutex mu_;  // guards current_; held only to copy or swap it
  std::shared_ptr<const ServedModel> current_;
  // The poller's own state (Refresh is called from one thread at a time).
  std::mutex refresh_mu_;
  uint64_t refused_ = 0;
  int refused_checks_ = 0;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sampan

#endif  // SAMPAN_SERVING_MODEL_FOLLOWER_H_
