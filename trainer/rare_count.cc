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
    absl::Status s =
        ReadParts(TrainPartsOf(config, rank), 1 << 14, &batch, [&] {
          rare->Count(batch.signs);
          rows += batch.size();
          return absl::OkStatus();
        });
    if (!s.ok()) return s;
  }
  rare->Freeze();
  SAMPAN_LOG(INFO) << "data.min_feature_count " << min_count << ": "
                   << rare->kept() << " signs keep their rows (counted over "
                   << rows << " training rows); the others are rare";
  return rare;
}

}  // namespace sampan
