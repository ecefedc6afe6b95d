// sparse_table: the embedding rows a parameter server hosts.
//
// A SparseTable maps feature signs (common/hash.h) to rows. A row is what the
// accessor below lays out: statistics (show, click), the first-order weight w,
// the embedding v[dim], and their Adagrad state. Pull returns only what the
// model reads, [w, v[0..dim)], so pull_dim() == 1 + dim.
//
// Thread safety: all methods may be called concurrently. Keys are spread
// over shards by ShardOf(); each shard has its own lock, taken once per
// request for all of that request's keys in the shard, so concurrent requests
// touching different shards never contend.
//
// Durability: this in-memory backend keeps nothing across restarts. The
// RocksDB backend (a later change) is the durable one.
#ifndef SAMPAN_SPARSE_TABLE_SPARSE_TABLE_H_
#define SAMPAN_SPARSE_TABLE_SPARSE_TABLE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sampan {

enum class OptimizerRule { kSgd, kAdagrad };

struct TableOptions {
  // Total shards of the table (the same on every pserver).
  uint32_t num_shards = 64;
  // Width of the embedding v; 0 gives a logistic-regression table (w only).
  uint32_t embedding_dim = 8;
  OptimizerRule rule = OptimizerRule::kAdagrad;
  float learning_rate = 0.05f;
  // Adagrad's starting squared-gradient sum.
  float initial_accumulator = 1e-2f;
  // New embeddings start uniform in [-init_range, init_range], seeded by the
  // key, so that a row is created identically on every run.
  float init_range = 0.01f;
  // L2 penalty added to every gradient.
  float l2 = 0.0f;
};

// One push: keys.size() gradient rows of pull_dim() floats, and per-key
// impressions and clicks. The arrays are borrowed for the call only.
struct PushBatch {
  absl::Span<const uint64_t> keys;
  const float* grads = nullptr;
  const float* shows = nullptr;
  const float* clicks = nullptr;
  // Identifies the writer (a trainer incarnation); sequence 0 = untracked.
  uint64_t writer_id = 0;
  uint64_t sequence = 0;
};

struct PushResult {
  uint64_t applied_keys = 0;
  // Keys skipped because their shard had already applied this sequence.
  uint64_t duplicate_keys = 0;
};

struct TableStats {
  uint64_t rows = 0;
  uint64_t memory_bytes = 0;
};

class SparseTable {
 public:
  virtual ~SparseTable() = default;

  // Floats per key returned by Pull and expected by Push.
  virtual uint32_t pull_dim() const = 0;

  // Writes keys.size() * pull_dim() floats to `out`, in key order. A key
  // without a row reads as its initial value when `is_training` (and the row
  // is created) and as zeros otherwise.
  virtual void Pull(absl::Span<const uint64_t> keys, bool is_training,
                    float* out) = 0;

  // Applies one gradient row (pull_dim() floats) per key and adds `shows`
  // and `clicks` (one per key) to the row's statistics, creating missing
  // rows. Exactly once: when batch.sequence > 0, each shard the batch touches
  // applies it only if the sequence is above the last one it applied for
  // batch.writer_id, and records it with the rows it changed; a replay
  // changes nothing. Writers must therefore send their pushes to a table in
  // sequence order (PsClient keeps one push in flight per pserver).
  // InvalidArgument if a gradient is NaN or infinite; nothing is applied then.
  virtual absl::StatusOr<PushResult> Push(const PushBatch& batch) = 0;

  virtual TableStats Stats() const = 0;
};

// An in-memory table: per shard an open-addressing hash index into an arena
// of rows.
std::unique_ptr<SparseTable> NewMemoryTable(const TableOptions& options);

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_SPARSE_TABLE_H_
