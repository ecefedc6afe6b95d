// DatasetSource: the step loop's batches (trainer/step_loop.h) from data held
// in memory (trainer/data/dataset.h), for `sampan train-local`'s CTR models
// and word vectors alike: every example `epochs` times, `batch_size` at a
// time, in file order or, with `shuffle`, in a new seeded order every epoch.
//
// Thread safety: Next and Stop may be called from any thread; `data` must
// outlive the source and not change.
#ifndef SAMPAN_TRAINER_DATASET_SOURCE_H_
#define SAMPAN_TRAINER_DATASET_SOURCE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer/data/dataset.h"
#include "trainer/step_loop.h"

namespace sampan {

class DatasetSource : public BatchSource {
 public:
  DatasetSource(const Dataset& data, size_t batch_size, int epochs,
                bool shuffle, uint64_t seed);
  bool Next(Batch* batch, absl::Status* error) override;
  // No batch is handed out after this (early stopping).
  void Stop() { next_.store(order_.size()); }

 private:
  const Dataset& data_;
  const size_t batch_size_;
  std::vector<uint32_t> order_;  // every epoch's order, concatenated
  std::atomic<size_t> next_{0};  // first unclaimed position in order_
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATASET_SOURCE_H_
