// Admission: decides whether a key without a row may get one. Two filters,
// both optional: a count filter (admitted on the N-th push, counted in a
// count-min sketch of saturating 8-bit counters, so counting costs a few
// bytes per sketch column instead of a row) and a probability filter (each
// push of an unadmitted key admits it with probability p).
//
// Not thread-safe: each table shard owns one and guards it with its lock.
// Counts are not persisted: after a restart a key needs N pushes again.
#ifndef SAMPAN_SPARSE_TABLE_ADMISSION_H_
#define SAMPAN_SPARSE_TABLE_ADMISSION_H_

#include <cstdint>
#include <random>
#include <vector>

#include "sparse_table/sparse_table.h"

namespace sampan {

class AdmissionFilter {
 public:
  static constexpr int kDepth = 4;  // hash rows of the sketch

  // `seed` makes the probability filter reproducible per shard.
  AdmissionFilter(const TableOptions& options, uint64_t seed);

  // False when every push may create a row (no filter configured).
  bool enabled() const { return enabled_; }
  // Counts one push of `key` (which has no row) and says whether it is now
  // admitted.
  bool OnPush(uint64_t key);
  uint64_t memory_bytes() const { return counters_.capacity(); }

 private:
  const uint32_t threshold_;
  const uint32_t width_;
  const float probability_;
  const bool enabled_;
  std::vector<uint8_t> counters_;  // kDepth rows of width_
  std::mt19937_64 rng_;
};

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_ADMISSION_H_
