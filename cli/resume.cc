#include "cli/resume.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/shard_map.h"
#include "coordinator/checkpoint_store.h"
#include "sparse_table/job_options.h"

namespace sampan {
namespace {

// Replaces the contents of `data_dir` with a copy of `snapshot`, keeping the
// directory itself: it may be a mount point (a volume, a tmpfs), which
// sparse_table's RestoreSnapshot (remove, then copy) cannot remove.
absl::Status ReplaceContents(const std::string& snapshot,
                             const std::string& data_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(snapshot, ec)) {
    return absl::NotFoundError(absl::StrCat("no snapshot at ", snapshot));
  }
  fs::create_directories(data_dir, ec);
  for (const auto& entry : fs::directory_iterator(data_dir, ec)) {
    fs::remove_all(entry.path(), ec);
    if (ec)
      return absl::InternalError(
          absl::StrCat("remove ", entry.path().string(), ": ", ec.message()));
  }
  fs::copy(snapshot, data_dir, fs::copy_options::recursive, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("copy ", snapshot, " to ", data_dir, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> RestoreLatestCheckpoint(const JobConfig& config,
                                                    coord::FleetState* fleet) {
  absl::StatusOr<std::string> dir =
      LatestCompleteCheckpoint(CheckpointRoot(config));
  if (!dir.ok()) return dir.status();
  absl::StatusOr<coord::CheckpointManifest> m = ReadManifest(*dir, false);
  if (!m.ok()) return m.status();
  // A rescaled fleet's checkpoint records its owners; it comes back as that
  // fleet, whatever cluster.num_pservers says.
  const bool rescaled = !FleetOfCheckpoint(config, *m).owner().empty();
  if ((!rescaled && m->num_pservers() != config.cluster().num_pservers()) ||
      m->num_trainers() != config.cluster().num_trainers()) {
    return absl::FailedPreconditionError(absl::StrCat(
        *dir, " was taken with ", m->num_pservers(), " pservers and ",
        m->num_trainers(), " trainers; this job has ",
        config.cluster().num_pservers(), " and ",
        config.cluster().num_trainers()));
  }
  // Positions are offsets into windows and file lists that these settings
  // shape: under others they would point at other rows.
  const bool by_file = config.data().split() == DataConfig::BY_FILE;
  for (const coord::DataPosition& p : m->trainers()) {
    if (p.window_rows() != config.data().shuffle_buffer_rows() ||
        p.by_file() != by_file) {
      return absl::FailedPreconditionError(absl::StrCat(
          *dir, " was taken with data.shuffle_buffer_rows ", p.window_rows(),
          " and data.split ", p.by_file() ? "BY_FILE" : "BY_LINE_RANGE",
          "; this job has ", config.data().shuffle_buffer_rows(), " and ",
          by_file ? "BY_FILE" : "BY_LINE_RANGE",
          " (its trainers' positions would point at other rows)"));
    }
  }
  if (absl::Status s = RestorePserverSnapshots(config, *dir, fleet); !s.ok()) {
    return s;
  }
  return *dir;
}

coord::FleetState FleetOfCheckpoint(const JobConfig& config,
                                    const coord::CheckpointManifest& m) {
  coord::FleetState fleet;
  if (m.shard_owner_size() == 0) return fleet;  // from before elasticity
  const std::vector<uint32_t> owners(m.shard_owner().begin(),
                                     m.shard_owner().end());
  if (m.num_pservers() == config.cluster().num_pservers() &&
      owners == InitialShardMap(owners.size(),
                                std::vector<std::string>(m.num_pservers()))
                    .owner) {
    return fleet;  // the job's first map
  }
  fleet.set_size(m.num_pservers());
  fleet.set_wanted(m.num_pservers());
  *fleet.mutable_owner() = m.shard_owner();
  return fleet;
}

absl::Status RestorePserverSnapshots(const JobConfig& config,
                                     const std::string& dir,
                                     coord::FleetState* fleet) {
  absl::StatusOr<coord::CheckpointManifest> m = ReadManifest(dir, false);
  if (!m.ok()) return m.status();
  *fleet = FleetOfCheckpoint(config, *m);
  const uint32_t pservers =
      fleet->owner().empty() ? config.cluster().num_pservers() : fleet->size();
  for (uint32_t i = 0; i < pservers; ++i) {
    const std::string snapshot = absl::StrCat(dir, "/pserver-", i);  // as
    // PserverCheckpointDir lays it out
    const std::string data_dir = TableOptionsFromJob(config, i).data_dir;
    if (absl::Status s = ReplaceContents(snapshot, data_dir); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat("restoring ", data_dir, " from ", snapshot,
                                 ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace sampan
