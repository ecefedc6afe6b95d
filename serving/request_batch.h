// A Predict request (proto/serving.proto) as the Batch a model scores: raw
// lines through the one parser of the model's format (trainer/data/
// formats.h), or already-hashed examples checked against the model's shape;
// then scored (trainer/scoring.h). Safe from any thread.
#ifndef SAMPAN_SERVING_REQUEST_BATCH_H_
#define SAMPAN_SERVING_REQUEST_BATCH_H_

#include <cstddef>

#include "absl/status/status.h"
#include "proto/serving.pb.h"
#include "trainer/data/batch.h"
#include "trainer/data/formats.h"
#include "trainer/scoring.h"

namespace sampan {

// Request limits of a server (serving.max_examples_per_request,
// serving.max_line_bytes).
struct RequestLimits {
  size_t max_examples = 1000;
  size_t max_line_bytes = 1 << 16;
};

// What a request must fit: the model's input shape and the server's limits.
struct RequestShape {
  ParseOptions parse;
  // The model's fields: every slot must be in 1..fields.
  int fields = 39;
  // Dense inputs per example (DenseDimOf(parse)).
  int dense_dim = 0;
  RequestLimits limits;
};

// Fills `batch` (labels all 0) with the request's examples. InvalidArgument
// when the request has no examples, both lines and examples, more than
// max_examples, or a malformed example; the message then starts with
// "example I: " (I its 0-based index in the request) and names the field
// and what was expected. A Criteo-format model also accepts the 39-field
// unlabeled form of a line; any other labeled format needs its label field
// (its value is ignored).
absl::Status RequestToBatch(const serving::PredictRequest& request,
                            const RequestShape& shape, Batch* batch);

// What a Predict call does with the version it took: RequestToBatch for
// `model`'s shape, then ScoreBatch into response->probabilities. Errors as
// RequestToBatch (the response is then unchanged), or the rows' lookup's
// (model.rows: a store's I/O error, an unreachable lookup shard). `hits`, when
// not null, receives the distinct signs the model had a row for, `misses` the
// others. `pool`: as ScoreBatch's.
absl::Status ScoreRequest(const serving::PredictRequest& request,
                          const ScoringModel& model,
                          const RequestLimits& limits,
                          serving::PredictResponse* response,
                          size_t* hits = nullptr, size_t* misses = nullptr,
                          ForkJoinPool* pool = nullptr);

}  // namespace sampan

#endif  // SAMPAN_SERVING_REQUEST_BATCH_H_
