// Saving and loading a CtrModel's dense weights together with the state of
// their optimizer, so that training can resume and `sampan eval` can score.
//
// Promises: SaveDenseModel never leaves a partial file at `path` (it writes
// `path`.tmp, fsyncs it and renames it over `path`); LoadDenseModel returns
// either exactly what was saved (bit for bit) or an error naming the file
// and what is wrong -- truncated, corrupt (CRC32 mismatch), another format
// version, another model kind, or the first dense block whose shape differs
// from the model it is loaded into.
//
// File layout (little-endian), format version 1:
//   "SAMPDNS\0"  u32 version  u64 body_bytes  u32 crc32(body)  body
//   body: u32 kind  u32 fields  u32 embedding_dim
//         u32 blocks, each: u32 name_bytes, name, u32 rows, u32 cols
//         u32 rule  i64 steps  u32 slots
//         f32 weights[dense_size]  f32 slot[slots][dense_size]
//
// Thread safety: free functions without shared state.
#ifndef SAMPAN_TRAINER_MODEL_MODEL_IO_H_
#define SAMPAN_TRAINER_MODEL_MODEL_IO_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/model/ctr_model.h"
#include "trainer/model/dense_optimizer.h"

namespace sampan {

// What a dense model file holds.
struct DenseModelState {
  std::vector<float> weights;  // model.dense_size() floats
  DenseOptimizerState optimizer;
};

// Writes `state` of `model` to `path` atomically. InvalidArgument when the
// weights do not fit the model; Unavailable on I/O errors (naming the file).
absl::Status SaveDenseModel(const std::string& path, const CtrModel& model,
                            const DenseModelState& state);

// Reads `path`, checking that it was saved from a model of the same kind and
// dense block shapes as `model`. NotFound when the file cannot be opened,
// DataLoss when it is truncated or corrupt, FailedPrecondition when it holds
// another model.
absl::StatusOr<DenseModelState> LoadDenseModel(const std::string& path,
                                               const CtrModel& model);

// The model kind's name as the job config spells it ("DEEPFM", "DCN_V2").
const char* CtrKindName(CtrKind kind);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_MODEL_IO_H_
