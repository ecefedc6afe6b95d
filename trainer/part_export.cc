#include "trainer/part_export.h"

#include <vector>

#include "absl/container/flat_hash_set.h"
#include "common/log.h"
#include "trainer/data/criteo_reader.h"
#include "trainer/input_queue.h"
#include "trainer/model/fm.h"

namespace sampan {

absl::Status ExportTrainerPart(const JobConfig& config, int rank, int row_dim,
                               const RowReader& read, const RareSigns* rare) {
  absl::flat_hash_set<uint64_t> keys = {kBiasSign};
  Batch batch;
  absl::Status s = ReadParts(TrainPartsOf(config, rank), 1 << 14, &batch, [&] {
    if (rare != nullptr) rare->Apply(&batch.signs, batch.slots);
    keys.insert(batch.signs.begin(), batch.signs.end());
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  const std::string dir = ModelDir(config);
  SAMPAN_LOG(INFO) << "trainer " << rank << ": exporting " << keys.size()
                   << " sparse rows to " << dir;
  return ExportSparsePart(dir, rank,
                          std::vector<uint64_t>(keys.begin(), keys.end()),
                          row_dim, read);
}

}  // namespace sampan
