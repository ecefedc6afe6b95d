// What crash_child pushes and crash_test checks, shared by both: the table
// options of a variant, and the keys and gradients of push `seq`.
//
// Variants: "redo", "redo_memtable", "rocksdb_wal" (the durability log and
// write-back; w only, dim 0), and "redo_int8", "rocksdb_wal_fp16" (the same
// logs with a compact row format and dim 4: the embedding is pushed too).
#ifndef SAMPAN_SPARSE_TABLE_CRASH_TESTLIB_H_
#define SAMPAN_SPARSE_TABLE_CRASH_TESTLIB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sparse_table/sparse_table.h"

namespace sampan {

constexpr uint64_t kCrashKeySpace = 997;

// The RocksDB table of `variant` in `dir`. Every push adds 1 to each of its
// keys' w (SGD, learning rate 1, gradient -1), so w counts the pushes.
TableOptions CrashOptions(const std::string& dir, const std::string& variant,
                          bool sync);
// The 64 keys push `seq` touches.
std::vector<uint64_t> CrashKeysOf(uint64_t seq);
// Push `seq`'s gradients: -1 for w, then a fixed pattern for v.
std::vector<float> CrashGradsOf(uint64_t seq, uint32_t pull_dim);

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_CRASH_TESTLIB_H_
