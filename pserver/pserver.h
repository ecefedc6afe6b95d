// pserver: serves the shards of its tables over gRPC (proto/ps.proto):
// table 0 holds the sparse rows; an ASYNC deep job adds table 1, the dense
// weights (sparse_table/job_options.h). Every request names its table.
//
// Pserver `index` owns the shards its options list (the job's shard map,
// common/shard_map.h), and refuses keys of other shards with ABORTED and
// its map's version in the trailing metadata kShardMapVersionKey: a
// misrouted key means a client with a stale map (which then fetches the
// coordinator's and resends), and silently serving it would split one
// feature's row across two servers. A refused request changes nothing.
//
// Shards move at run time (pserver/shard_mover.h, proto/ps.proto): SetShards
// replaces the owned shards, the frozen ones (owned, moving out: pushes
// refused with ABORTED and the version, pulls answered) and the map version,
// never to an older version (pserver/shard_ownership.h); ExportShard streams
// a frozen shard's rows and writer sequences, ImportShard replaces a shard
// not owned yet with such a stream, durably, and DropShard deletes a shard no
// longer owned. Those four run on gRPC's synchronous threads.
//
// Requests are validated before anything is applied (table id, matching
// lengths, size limit, ownership, finite gradients); a bad request gets
// INVALID_ARGUMENT with a message naming the RPC and field, changes nothing,
// and other clients carry on.
//
// Threading: gRPC's callback threads parse and answer the pulls whose rows
// are all in memory (SparseTable::PullIfInMemory: no I/O); everything else
// they enqueue. Two WorkerPools of `num_workers` threads each run that table
// work, one for pulls (those that read RocksDB) and one for pushes, so that
// pulls never queue behind durable writes. A full queue answers
// RESOURCE_EXHAUSTED (clients back off and retry). The table does its own
// per-shard locking, so workers proceed in parallel on different shards.
// With `run_inline` (memory tables) the callback threads run the table work
// themselves.
//
// Pushes are exactly-once per (trainer_id, sequence) and shard, as the
// table promises (sparse_table.h). A push is acknowledged only after the
// table applied it, so with a durable table an acknowledged push survives a
// crash.
//
// Shrink (the table lifecycle: decay, age, delete; proto/ps.proto) runs
// where pushes run and locks its whole table until done: the table's pulls
// and pushes wait, so callers shrink while trainers pause. It counts
// sampan_table_shrinks_total and sampan_table_rows_evicted_total, logs one
// line and refreshes the gauges when it ends.
#ifndef SAMPAN_PSERVER_PSERVER_H_
#define SAMPAN_PSERVER_PSERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "proto/job.pb.h"
#include "proto/ps.grpc.pb.h"
#include "sparse_table/sparse_table.h"

namespace sampan {

// The most keys one Pull or Push may carry; clients split larger batches.
inline constexpr size_t kMaxKeysPerRequest = 1 << 20;

struct PserverOptions {
  uint32_t index = 0;
  uint32_t num_shards = 64;
  // The shards of num_shards this pserver owns at start, and the version of
  // the shard map that says so (common/shard_map.h); SetShards changes both.
  // Empty: every shard (a pserver alone). Version 0: no shard until the
  // first SetShards or ApplyShardMap (a pserver of a coordinated job, which
  // the coordinator's Register answer tells what it owns).
  std::vector<uint32_t> owned_shards;
  uint64_t shard_map_version = 1;
  // Threads running table work, per pool (pulls, pushes).
  int num_workers = 2;
  // Requests waiting for a worker before new ones are refused.
  size_t max_queued_requests = 4096;
  // Runs pulls, pushes and shrinks on gRPC's callback thread, not the pools:
  // saves two thread switches per request (profiled at 13% of a pserver's
  // CPU), but a handler that blocks stalls gRPC's pollers, so only for
  // tables that never wait on I/O (the memory backend). The pools and their
  // queue limit then serve checkpoints only; gRPC's flow control bounds
  // in-flight work.
  bool run_inline = false;
  // Pushes, shrinks and checkpoints are refused (FAILED_PRECONDITION) while
  // less than this many bytes are free under data_dir (pserver/disk_guard.h);
  // 0 = never. For RocksDB tables.
  std::string data_dir;
  uint64_t min_free_disk_bytes = 0;
  // Where the Checkpoint RPC for an epoch snapshots (a directory that must
  // not exist yet), derived from the server's own configuration; unset: the
  // RPC is refused (FAILED_PRECONDITION). The caller names only the epoch.
  std::function<std::string(uint64_t epoch)> checkpoint_dir;
  // The newest coordinator epoch the pserver's coordinator client has seen
  // (common/coordinator_epoch.h). A Checkpoint call carrying an older epoch
  // than that or than an earlier Checkpoint call's comes from a coordinator
  // that was replaced, and is refused (FAILED_PRECONDITION).
  std::function<uint64_t()> newest_coordinator_epoch;
};

// What a pserver tells the coordinator with its heartbeats (the job page).
struct PserverLoad {
  uint64_t rows = 0;  // all tables, as of the last RefreshGauges
  uint64_t keys_pulled = 0, keys_pushed = 0;  // since the process started
};

class Pserver {
 public:
  // Serves `table` as table 0. Registers its metrics in MetricsRegistry().
  static std::unique_ptr<Pserver> Create(const PserverOptions& options,
                                         std::unique_ptr<SparseTable> table);
  // Serves tables[i] as table i. A checkpoint snapshots table 0 into
  // options.checkpoint_dir(epoch) and table i > 0 into its table-i
  // (job_options.h lays the data directories out the same way). Gauges sum the
  // tables.
  static std::unique_ptr<Pserver> Create(
      const PserverOptions& options,
      std::vector<std::unique_ptr<SparseTable>> tables);
  virtual ~Pserver() = default;

  // The gRPC service to register with a server.
  virtual grpc::Service* service() = 0;

  // Refreshes gauges that are read rather than counted (table rows); call
  // periodically. Does not wait for a shrink in progress: the table gauges
  // then keep their values until it ends.
  virtual void RefreshGauges() = 0;

  // Thread-safe; reads the gauges and counters this process serves.
  virtual PserverLoad Load() const = 0;

  // What the SetShards RPC does, for the pserver's own process (the
  // coordinator's Register answer): FAILED_PRECONDITION for a version older
  // than the pserver's (a newer SetShards came first, which stands).
  virtual grpc::Status ApplyShardMap(const ps::SetShardsRequest& request) = 0;

  // Call after the gRPC server has shut down: runs the requests already
  // accepted, stops the workers and flushes the table.
  virtual void Stop() = 0;
};

}  // namespace sampan

#endif  // SAMPAN_PSERVER_PSERVER_H_
