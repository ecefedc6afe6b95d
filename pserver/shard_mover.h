// ShardMover: the pserver's side of moving a shard (proto/ps.proto
// SetShards, ExportShard, ImportShard, DropShard; the order a coordinator
// calls them in and why is in docs/architecture.md, "Moving a shard").
// Validates each request, holds the shard's move slot in ShardOwnership
// while it runs, streams the table's ShardChunks, and counts
// sampan_pserver_shard_move_* metrics. Runs on gRPC's synchronous threads
// (each call may block for the length of a shard); the table work of an
// export, import or drop runs on a thread of its own at nice kMoveNice, so
// that pulls and pushes come first on a busy machine. Thread-safe.
#ifndef SAMPAN_PSERVER_SHARD_MOVER_H_
#define SAMPAN_PSERVER_SHARD_MOVER_H_

#include <memory>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "proto/ps.grpc.pb.h"
#include "pserver/metrics.h"
#include "pserver/shard_ownership.h"
#include "sparse_table/sparse_table.h"

namespace sampan {

// Nice value of a move's table work (common/thread_priority.h): weight 335
// against 1024 for nice 0, a quarter of a busy core's share; all of an
// idle one.
inline constexpr int kMoveNice = 5;

// INVALID_ARGUMENT naming `rpc` unless table_id < num_tables.
grpc::Status CheckTableId(const char* rpc, uint32_t table_id,
                          size_t num_tables);

class ShardMover {
 public:
  // Borrows all three; they must outlive it.
  ShardMover(ShardOwnership* ownership,
             const std::vector<std::unique_ptr<SparseTable>>* tables,
             PserverMetrics* metrics)
      : ownership_(*ownership), tables_(*tables), metrics_(metrics) {}

  grpc::Status SetShards(grpc::ServerContext& ctx,
                         const ps::SetShardsRequest& req,
                         ps::SetShardsResponse* resp);
  grpc::Status Export(grpc::ServerContext& ctx,
                      const ps::ExportShardRequest& req,
                      grpc::ServerWriterInterface<ps::ShardChunk>* writer);
  grpc::Status Import(
      grpc::ServerContext& ctx,
      grpc::ServerReaderInterface<ps::ImportShardRequest>* reader,
      ps::ImportShardResponse* resp);
  grpc::Status Drop(grpc::ServerContext& ctx, const ps::DropShardRequest& req,
                    ps::DropShardResponse* resp);

 private:
  // Holds (table, shard)'s move slot and the shards_moving gauge.
  class Slot;
  grpc::Status ExportAtLowPriority(
      grpc::ServerContext& ctx, const ps::ExportShardRequest& req,
      grpc::ServerWriterInterface<ps::ShardChunk>* writer);
  // Import's work once the first message named the shard.
  grpc::Status ImportInto(
      grpc::ServerContext& ctx, ps::ImportShardRequest& req,
      grpc::ServerReaderInterface<ps::ImportShardRequest>* reader,
      uint64_t* rows);

  ShardOwnership& ownership_;
  const std::vector<std::unique_ptr<SparseTable>>& tables_;
  PserverMetrics* const metrics_;
};

}  // namespace sampan

#endif  // SAMPAN_PSERVER_SHARD_MOVER_H_
