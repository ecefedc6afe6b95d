#include "trainer/rare_count.h"

#include "common/log.h"
#include "trainer/input_queue.h"

namespace sampan {

absl::StatusOr<std::unique_ptr<RareSigns>> CountJobSigns(
    const JobConfig& config) {
  const int min_count = config.data().min_feature_count();
  if (min_count <= 1) return nullptr;
  auto rare = std::make_unique<RareSigns>(min_count);
  Batch batch;
  uint64_t rows = 0;
  const int trainers = std::max<int>(1, config.cluster().num_trainers());
  for (int rank = 0; rank < trainers; ++rank) {
    for (const DataPart& part : TrainPartsOf(config, rank)) {
      auto reader = OpenPart(part);
      if (!reader.ok()) return reader.status();
      while ((*reader)->NextBatch(1 << 14, &batch)) {
        rare->Count(batch.signs);
        rows += batch.size();
      }
      if (!(*reader)->read_status().ok()) return (*reader)->read_status();
    }
  }
  rare->Freeze();
  SAMPAN_LOG(INFO) << "data.min_feature_count " << min_count << ": "
                   << rare->kept() << " signs keep their rows (counted over "
                   << rows << " training rows); the others are rare";
  return rare;
}

}  // namespace sampan
