// The caller's side of moving one shard of one table between two pservers
// (proto/ps.proto ExportShard, ImportShard): streams the source's export
// into the target's import, chunk by chunk as they arrive, so memory stays
// at about one chunk whatever the shard's size.
//
// The source must have the shard frozen and the target must not own it, at
// `shard_map_version` or newer; the order of the whole move is in
// docs/architecture.md ("Moving a shard"). Either call failing fails the
// copy: the target then holds no part of the stream (ImportShard imports a
// complete stream or nothing).
#ifndef SAMPAN_PSERVER_SHARD_COPY_H_
#define SAMPAN_PSERVER_SHARD_COPY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps.grpc.pb.h"

namespace sampan {

struct ShardCopyRequest {
  uint32_t table_id = 0;
  uint32_t shard = 0;
  uint64_t shard_map_version = 1;
  // Both streams end by then (DEADLINE_EXCEEDED).
  absl::Time deadline = absl::InfiniteFuture();
  // Sent as initial metadata on both calls, e.g. the coordinator's epoch.
  std::string metadata_key, metadata_value;
};

// Returns the rows the target imported. The error names the call that
// failed, "ExportShard" or "ImportShard", and its gRPC status.
absl::StatusOr<uint64_t> CopyShard(ps::SparseTable::StubInterface& source,
                                   ps::SparseTable::StubInterface& target,
                                   const ShardCopyRequest& request);

}  // namespace sampan

#endif  // SAMPAN_PSERVER_SHARD_COPY_H_
