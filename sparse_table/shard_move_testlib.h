// Test helpers for shard moves (shard_move_test, shard_move_crash_test and
// its child): the table modes a move must work in, a deterministic load of
// pushes, and a shard's whole content as an export sees it.
#ifndef SAMPAN_SPARSE_TABLE_SHARD_MOVE_TESTLIB_H_
#define SAMPAN_SPARSE_TABLE_SHARD_MOVE_TESTLIB_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sparse_table/sparse_table.h"

namespace sampan {

inline constexpr uint32_t kMoveShards = 4;
inline constexpr uint32_t kMoveDim = 4;

struct MoveMode {
  const char* name;
  Backend backend;
  DurabilityLog log;
  WriteBack write_back;
};
// Memory, RocksDbWal, RedoSst, RedoMemtable.
std::vector<MoveMode> AllMoveModes();
// The mode called `name`; Memory when none is.
MoveMode MoveModeNamed(const std::string& name);

// Adagrad, embedding created at score 0.5 (keys pushed with a click get
// one, the others stay short rows), a redo log that never flushes by
// itself: rows pushed stay dirty in the hot tier until something flushes.
TableOptions MoveTableOptions(const MoveMode& mode, const std::string& dir);

// n keys spread over every shard.
std::vector<uint64_t> MoveKeys(int n);

// `rounds` pushes of every key by `writer`, sequences first, first+1, ...;
// the gradients depend on the key and the round; every other key clicks.
// Returns the results summed.
absl::StatusOr<PushResult> PushRounds(SparseTable& table, uint64_t writer,
                                      uint64_t first, int rounds,
                                      const std::vector<uint64_t>& keys);

struct ShardContent {
  std::map<uint64_t, std::vector<float>> rows;  // key -> stored floats
  std::map<uint64_t, uint64_t> sequences;       // writer -> sequence
  size_t chunks = 0;
};
absl::StatusOr<ShardContent> ExportAll(SparseTable& table, uint32_t shard,
                                       size_t max_rows = 7);

// Export from `from` into an import of `to`, committed.
absl::Status MoveShard(SparseTable& from, SparseTable& to, uint32_t shard,
                       size_t max_rows = 7);

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_SHARD_MOVE_TESTLIB_H_
