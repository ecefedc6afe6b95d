// The keys of one batch as the PS sees them: its unique feature signs (the
// bias row first), the row each sign maps to, and per-key impressions and
// clicks for the table's statistics. Shared by the distributed and the local
// trainer. Not thread-safe: one per worker, reused across batches.
#ifndef SAMPAN_TRAINER_BATCH_KEYS_H_
#define SAMPAN_TRAINER_BATCH_KEYS_H_

#include <cstdint>
#include <vector>

#include "trainer/data/batch.h"
#include "trainer/key_dedup.h"
#include "trainer/model/fm.h"

namespace sampan {

class BatchKeys {
 public:
  KeyDedup dedup;
  std::vector<uint64_t> keys;         // kBiasSign first, then first-seen order
  std::vector<uint32_t> row_of_sign;  // per batch.signs[j]: its index in keys
  std::vector<float> shows, clicks;   // per key

  // Fills keys and row_of_sign from `batch`.
  void Dedup(const Batch& batch) {
    Start(batch);
    for (size_t j = 0; j < batch.signs.size(); ++j) Map(batch, j);
    dedup.TakeKeys(&keys);
  }

  // Dedup and CountShowsAndClicks in one pass over the signs: each new key's
  // counters start as it is first seen.
  void DedupAndCount(const Batch& batch) {
    Start(batch);
    shows.assign(1, batch.size());
    clicks.assign(1, 0.0f);
    for (size_t e = 0; e < batch.size(); ++e) {
      const float y = batch.labels[e];
      clicks[0] += y;
      for (uint32_t j = batch.offsets[e]; j < batch.offsets[e + 1]; ++j) {
        const uint32_t row = Map(batch, j);
        if (row == shows.size()) {
          shows.push_back(0.0f);
          clicks.push_back(0.0f);
        }
        shows[row] += 1;
        clicks[row] += y;
      }
    }
    dedup.TakeKeys(&keys);
  }

  // Impressions and clicks per key; every example shows the bias row.
  void CountShowsAndClicks(const Batch& batch) {
    shows.assign(keys.size(), 0.0f);
    clicks.assign(keys.size(), 0.0f);
    shows[0] = batch.size();
    for (size_t e = 0; e < batch.size(); ++e) {
      clicks[0] += batch.labels[e];
      for (uint32_t j = batch.offsets[e]; j < batch.offsets[e + 1]; ++j) {
        shows[row_of_sign[j]] += 1;
        clicks[row_of_sign[j]] += batch.labels[e];
      }
    }
  }

 private:
  // How many signs ahead Map prefetches a slot: enough to cover a miss.
  static constexpr size_t kLookahead = 16;

  void Start(const Batch& batch) {
    dedup.Reset(batch.signs.size() + 1);
    dedup.Index(kBiasSign);
    row_of_sign.resize(batch.signs.size());
  }
  uint32_t Map(const Batch& batch, size_t j) {
    if (j + kLookahead < batch.signs.size()) {
      dedup.Prefetch(batch.signs[j + kLookahead]);
    }
    return row_of_sign[j] = dedup.Index(batch.signs[j]);
  }
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_BATCH_KEYS_H_
