// Checkpoint directories on disk: layout, the manifest that makes one
// complete, and which one a resume uses.
//
// Layout: <root>/ckpt-<epoch>/ holds pserver-<i>/ (each pserver's RocksDB
// snapshot), dense.bin (hybrid jobs), job.pbtxt (the job config it was taken
// under) and MANIFEST. The manifest lists every other file with its size and
// crc32 and is written last, through a
// temporary file, fsync and rename, so a checkpoint without a MANIFEST (a
// crash while it was taken) is incomplete and is never used.
//
// Functions are safe to call from several processes: writers only ever
// create new directories and rename a finished manifest into place.
#ifndef SAMPAN_COORDINATOR_CHECKPOINT_STORE_H_
#define SAMPAN_COORDINATOR_CHECKPOINT_STORE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"

namespace sampan {

inline constexpr uint32_t kManifestVersion = 1;

// checkpoint.dir, or <output_dir>/checkpoints when it is empty.
std::string CheckpointRoot(const JobConfig& config);
// <root>/ckpt-<epoch>.
std::string CheckpointDir(const std::string& root, uint64_t epoch);
// <root>/ckpt-<epoch>/pserver-<index>: where pserver `index` snapshots its
// tables for `epoch` (each pserver derives it from its own config).
std::string PserverCheckpointDir(const std::string& root, uint64_t epoch,
                                 uint32_t index);
// <root>/dense-step<steps>.bin: where rank 0 of a HYBRID/SYNC job saves its
// dense state before it arrives at a checkpoint at `steps`; the coordinator
// derives the same name and moves the file into the checkpoint as dense.bin
// (no RPC carries a path).
std::string DenseCheckpointFile(const std::string& root, uint64_t steps);
// The highest epoch with a directory under `root`, complete or not; 0 when
// there is none. New checkpoints take the epochs after it.
uint64_t MaxCheckpointEpoch(const std::string& root);

// Lists every file under `dir` (size and crc32) into `manifest`, then writes
// it as <dir>/MANIFEST atomically and durably. Files `manifest` lists
// already (digested where they were written: each pserver its snapshot's)
// are kept as listed and not read again.
absl::Status WriteManifest(const std::string& dir,
                           coord::CheckpointManifest* manifest);

// Reads <dir>/MANIFEST and, with `verify`, checks that every file it lists
// has its size and crc32. DataLoss naming the file when one does not;
// NotFound without a manifest.
absl::StatusOr<coord::CheckpointManifest> ReadManifest(const std::string& dir,
                                                       bool verify = true);

// Writes `config` as <dir>/job.pbtxt (text proto), durably; call before
// WriteManifest, which then lists it.
absl::Status WriteCheckpointConfig(const std::string& dir,
                                   const JobConfig& config);

// The job config <dir>/job.pbtxt records: what a warm start from the
// checkpoint checks its own shape against. NotFound (naming the file) for a
// checkpoint taken before checkpoints recorded it; DataLoss when it does not
// parse. Verify the manifest first (ReadManifest): this reads the file only.
absl::StatusOr<JobConfig> ReadCheckpointConfig(const std::string& dir);

// Whether `path` is a checkpoint directory (it has a MANIFEST) or a root of
// them (it has ckpt-<epoch> directories). Reads the directory listing only.
bool IsCheckpointPath(const std::string& path);

// The checkpoint `path` names: `path` itself when it has a MANIFEST (its
// files verified against it with `verify`; errors as ReadManifest's), else
// the newest complete one under it (LatestCompleteCheckpoint, which always
// verifies).
absl::StatusOr<std::string> ResolveCheckpoint(const std::string& path,
                                              bool verify = true);

// The directory of the complete checkpoint with the highest epoch under
// `root` whose files verify; NotFound when there is none.
absl::StatusOr<std::string> LatestCompleteCheckpoint(const std::string& root);

// Deletes all but the `keep` newest complete checkpoints, and incomplete
// ones older than the newest complete one.
void PruneCheckpoints(const std::string& root, uint32_t keep);

}  // namespace sampan

#endif  // SAMPAN_COORDINATOR_CHECKPOINT_STORE_H_
