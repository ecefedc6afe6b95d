// pserver: serves the shards of a sparse table over gRPC (proto/ps.proto).
//
// Pserver `index` owns the shards PserverOfShard() (common/hash.h) gives it,
// and refuses keys
// that route elsewhere: a misrouted key means a client with a stale spec, and
// silently serving it would split one feature's row across two servers.
//
// Requests are validated before anything is applied (table id, matching
// lengths, size limit, ownership, finite gradients); a bad request gets
// INVALID_ARGUMENT with a message naming the RPC and field, changes nothing,
// and other clients carry on. Handlers run concurrently on gRPC's threads;
// the table does its own per-shard locking.
#ifndef SAMPAN_PSERVER_PSERVER_H_
#define SAMPAN_PSERVER_PSERVER_H_

#include <cstdint>
#include <memory>

#include "proto/job.pb.h"
#include "proto/ps.grpc.pb.h"

namespace sampan {

// The most keys one Pull or Push may carry.
inline constexpr size_t kMaxKeysPerRequest = 1 << 20;

// A service for pserver `index` of the job in `config`, with an in-memory
// table built from config.table() and config.model().
std::unique_ptr<ps::SparseTable::Service> NewSparseTableService(
    const JobConfig& config, uint32_t index);

}  // namespace sampan

#endif  // SAMPAN_PSERVER_PSERVER_H_
