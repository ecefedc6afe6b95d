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

struct BatchKeys {
  KeyDedup dedup;
  std::vector<uint64_t> keys;         // kBiasSign first, then first-seen order
  std::vector<uint32_t> row_of_sign;  // per batch.signs[j]: its index in keys
  std::vector<float> shows, clicks;   // per key

  // Fills keys and row_of_sign from `batch`.
  void Dedup(const Batch& batch) {
    dedup.Reset(batch.signs.size() + 1);
    dedup.Index(kBiasSign);
    row_of_sign.resize(batch.signs.size());
    for (size_t j = 0; j < batch.signs.size(); ++j) {
      row_of_sign[j] = dedup.Index(batch.signs[j]);
    }
    keys = dedup.keys();
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
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_BATCH_KEYS_H_
