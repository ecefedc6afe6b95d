// Model versions: what continuous training publishes after every pass, and
// what `sampan eval` and warm start read back.
//
// A version is a base (every servable row of the table) or a delta (the rows
// changed since the previous version, and all dense weights) on top of the
// newest base before it. Reading version N merges its chain: base B, then
// each delta B+1..N in order.
//
// Layout under the versions root (data.stream.versions_dir, by default
// <output_dir>/versions):
//
//   v-NNNNNN/          version N (six digits or more, zero-padded): a model
//                      directory exactly as trainer/model_export.h writes
//                      one (job.pbtxt, dense.bin, sparse-NNNNN.bin, MODEL),
//                      so every reader of exported models reads a base
//     VERSION          written last: a text proto VersionManifest
//                      (proto/model_version.proto): format=1, version,
//                      kind BASE or DELTA, base_version (its own number for
//                      a base), pass, pass_index, created_unix_seconds,
//                      marker_unix_seconds, rows (in its parts), and path,
//                      size and crc32 of every other file of the directory
//   LATEST             the directory name of the newest published version
//                      ("v-000042\n"), replaced atomically
//   .staging-v-NNNNNN/ version N while its parts are written; never read
//
// In a version, a row of all zeros (+0 or -0) stands for no row: a delta
// deletes a key with one, and readers drop such rows of a base as well, so
// base N reads the same as base B + deltas B+1..N. (Eval scores a sign
// without a row as zeros; only with min_feature_count > 1 does it differ:
// such a sign takes its slot's rare sign, as one the model never held.)
//
// Promises: a version directory is either absent or complete and verified
// by its VERSION: PublishVersion builds it aside and renames it into place
// (an existing one is swapped out atomically), and LATEST always names a
// published version. Reading checks every file of the chain against its
// VERSION before it trusts a row. One process publishes into a root at a
// time (rank 0); any number may read.
#ifndef SAMPAN_TRAINER_MODEL_VERSION_H_
#define SAMPAN_TRAINER_MODEL_VERSION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/job.pb.h"
#include "proto/model_version.pb.h"
#include "trainer/model_export.h"

namespace sampan {

// data.stream.versions_dir, or <output_dir>/versions when it is empty.
std::string VersionsRoot(const JobConfig& config);
// <root>/v-NNNNNN.
std::string VersionDir(const std::string& root, uint64_t version);
// <root>/.staging-v-NNNNNN: where every trainer writes its part of `version`
// (ExportSparsePart(StagingDir(...), rank, ...)) and rank 0 its dense.bin
// (SaveDenseModel(DenseModelPath(StagingDir(...)), ...)) before rank 0
// publishes it.
std::string StagingDir(const std::string& root, uint64_t version);

// Removes StagingDir(root, version) with whatever a failed attempt left in
// it; OK when there is none. Rank 0 calls it before the others write.
absl::Status ClearStaging(const std::string& root, uint64_t version);

// What PublishVersion records about a version besides its files.
struct VersionInfo {
  uint64_t version = 0;
  // A base holds every row; a delta the rows changed since version - 1.
  bool base = false;
  // A delta's base (< version); a base's own number is used for a base.
  uint64_t base_version = 0;
  // The pass the version covers, as the stream names it ("20261201/05"),
  // and its index in the job's sequence of passes.
  std::string pass;
  uint64_t pass_index = 0;
  // When the pass's done-marker appeared (seconds since the epoch).
  double marker_unix_seconds = 0;
};

// Publishes the staging directory of info.version as v-NNNNNN: writes its
// job.pbtxt and MODEL (FinishModelDir), then VERSION listing every file, then
// renames it into place (swapping out a version of that number that a resumed
// job published before), then points LATEST at it, then applies retention:
// the newest `keep_bases` bases and every version after the oldest of them
// stay, older ones are deleted (0 keeps everything). Versions numbered above
// info.version were built on a state the job has left behind: they are
// withdrawn (LATEST first) and deleted before the new one goes in.
//
// FailedPrecondition when the staging directory lacks dense.bin or a part,
// or when a delta's base is not a published base or a version between them
// is missing. Unavailable on I/O errors, naming the file. Retention that
// fails is logged; it does not fail a published version.
absl::Status PublishVersion(const std::string& root, const JobConfig& config,
                            const ModelManifest& manifest,
                            const VersionInfo& info, uint32_t keep_bases);

// The version LATEST names: NotFound when nothing was published under
// `root`, DataLoss when LATEST is malformed.
absl::StatusOr<uint64_t> LatestVersion(const std::string& root);

// The VERSION of every published version under `root` (a directory without
// one is not published), by ascending number; empty when there is none.
// DataLoss naming the file when a VERSION is malformed.
absl::StatusOr<std::vector<VersionManifest>> ListVersions(
    const std::string& root);

// A model as `sampan eval` scores it.
struct LoadedModel {
  // The directory whose job.pbtxt, MODEL and dense.bin describe the model:
  // the exported model itself, or the newest version of the chain.
  std::string dir;
  // The version's VERSION when a version was read; empty for an exported
  // model directory.
  std::optional<VersionManifest> version;
  JobConfig config;
  ModelManifest manifest;
  // Every part merged; for a version, its chain merged.
  SparseRows sparse;
};

// Reads version `version` under `root`, its chain verified and merged
// (rows of all zeros dropped). DataLoss naming the file when a file of the
// chain differs from its VERSION or the chain is inconsistent; NotFound
// naming the version when a version of the chain is missing.
absl::StatusOr<LoadedModel> ReadVersion(const std::string& root,
                                        uint64_t version);

// One version of a chain: its directory and its VERSION.
struct ChainMember {
  std::string dir;
  VersionManifest version;
};

// The chain of version `version` under `root`, base first: every VERSION
// read and checked to belong to it, no other file read yet. For readers that
// apply a chain themselves (serving/row_store.h) rather than merge it in
// memory. Errors as ReadVersion.
absl::StatusOr<std::vector<ChainMember>> ReadChainMembers(
    const std::string& root, uint64_t version);

// The chain of what a user names as a model (as ReadModel reads it), no
// file but VERSIONs read yet; an exported model directory is one member
// whose VersionManifest is empty (format 0, no files). Errors as ReadModel.
absl::StatusOr<std::vector<ChainMember>> ResolveChain(const std::string& path);

// Checks every file of `member` against its VERSION (size and CRC32):
// DataLoss naming the file that differs.
absl::Status VerifyChainMember(const ChainMember& member);

// Reads what a user names as a model: a versions root (the version LATEST
// names), a version directory <root>/v-N (v-12 works for v-000012), or an
// exported model directory, read as it is. FailedPrecondition for a staging
// directory; otherwise as ReadVersion or ReadModelManifest/ReadSparseRows.
absl::StatusOr<LoadedModel> ReadModel(const std::string& path);

// The sorted keys of version `version`'s merged chain with
// key % parts == part: every key the model may hold, for the trainer that
// writes part `part` of the next base. InvalidArgument unless
// 0 <= part < parts; otherwise as ReadVersion.
absl::StatusOr<std::vector<uint64_t>> ChainKeys(const std::string& root,
                                                uint64_t version, int part,
                                                int parts);

// "v-000042 (delta on base v-000040, pass 20261201/05)" for a version,
// the directory for an exported model.
std::string DescribeModel(const LoadedModel& model);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_VERSION_H_
