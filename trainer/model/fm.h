// The bias row. Every model's global bias lives in the sparse table as the
// row of kBiasSign (its w), so LR and FM, whose other weights are all rows
// too, need no dense synchronisation between trainers. The models
// themselves are trainer/model/ctr_model.h.
#ifndef SAMPAN_TRAINER_MODEL_FM_H_
#define SAMPAN_TRAINER_MODEL_FM_H_

#include <cstdint>

#include "common/hash.h"

namespace sampan {

// The sign of the global bias row: slot 0 is reserved for it.
inline const uint64_t kBiasSign = FeatureSign(0, "bias");

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_FM_H_
