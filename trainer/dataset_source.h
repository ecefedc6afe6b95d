// The step loop's sources of batches (trainer/step_loop.h).
//
// DatasetSource: from data held in memory (trainer/data/dataset.h), for
// `sampan train-local`'s CTR models and word vectors alike: every example
// `epochs` times, `batch_size` at a time, in file order or, with `shuffle`,
// in a new seeded order every epoch.
//
// QueueSource: a trainer rank's InputQueue (trainer/input_queue.h, the
// rank's part of the files, read ahead), rare signs merged when
// data.min_feature_count asks.
//
// Thread safety: Next and Stop may be called from any thread; `data` and
// `queue` must outlive the source, `data` not change; set_rare before the
// loop starts.
#ifndef SAMPAN_TRAINER_DATASET_SOURCE_H_
#define SAMPAN_TRAINER_DATASET_SOURCE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer/data/dataset.h"
#include "trainer/data/rare_signs.h"
#include "trainer/input_queue.h"
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

class QueueSource : public BatchSource {
 public:
  explicit QueueSource(InputQueue* queue) : queue_(queue) {}
  void set_rare(const RareSigns* rare) { rare_ = rare; }
  bool Next(Batch* batch, absl::Status* error) override {
    if (!queue_->Next(batch, error)) return false;
    if (rare_ != nullptr) rare_->Apply(&batch->signs, batch->slots);
    return true;
  }

 private:
  InputQueue* const queue_;
  const RareSigns* rare_ = nullptr;  // not owned
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATASET_SOURCE_H_
