#include "serving/request_batch.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

absl::Status Bad(size_t index, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("example ", index, ": ", what));
}

// A Criteo model's labeled lines come with or without their label field.
ParseOptions OptionsForLine(std::string_view line, const ParseOptions& parse) {
  ParseOptions options = parse;
  if (parse.format == DataFileFormat::kCriteo &&
      std::count(line.begin(), line.end(), '\t') ==
          kCriteoIntFields + kCriteoCatFields - 1) {
    options.format = DataFileFormat::kCriteoUnlabeled;
  }
  return options;
}

absl::Status CheckSlots(size_t index, const Batch& batch, size_t begin,
                        int fields) {
  for (size_t j = begin; j < batch.slots.size(); ++j) {
    if (batch.slots[j] < 1 || batch.slots[j] > fields) {
      return Bad(index,
                 absl::StrCat("slot ", batch.slots[j], " of sign ", j - begin,
                              ": expected a slot in 1..", fields));
    }
  }
  return absl::OkStatus();
}

absl::Status AddLine(size_t index, const std::string& line,
                     const RequestShape& shape, Batch* batch) {
  if (line.size() > shape.limits.max_line_bytes) {
    return Bad(index, absl::StrCat("line of ", line.size(),
                                   " bytes: expected at most ",
                                   shape.limits.max_line_bytes));
  }
  const size_t begin = batch->signs.size();
  float label = 0;
  absl::Status s = ParseLine(line, OptionsForLine(line, shape.parse), &label,
                             &batch->signs, &batch->slots, &batch->dense);
  if (!s.ok()) return Bad(index, absl::StrCat("line: ", s.message()));
  return CheckSlots(index, *batch, begin, shape.fields);
}

absl::Status AddExample(size_t index, const serving::Example& example,
                        const RequestShape& shape, Batch* batch) {
  if (example.signs_size() != example.slots_size()) {
    return Bad(index, absl::StrCat("slots: expected one per sign (",
                                   example.signs_size(), "), got ",
                                   example.slots_size()));
  }
  if (example.dense_size() != shape.dense_dim) {
    return Bad(index, absl::StrCat("dense: expected ", shape.dense_dim,
                                   " values, got ", example.dense_size()));
  }
  for (int i = 0; i < example.dense_size(); ++i) {
    if (!std::isfinite(example.dense(i))) {
      return Bad(index, absl::StrCat("dense[", i,
                                     "]: expected a finite "
                                     "value, got ",
                                     example.dense(i)));
    }
  }
  for (int j = 0; j < example.slots_size(); ++j) {
    const uint32_t slot = example.slots(j);
    if (slot < 1 || slot > uint32_t(shape.fields)) {
      return Bad(index, absl::StrCat("slots[", j, "]: expected a slot in 1..",
                                     shape.fields, ", got ", slot));
    }
  }
  batch->signs.insert(batch->signs.end(), example.signs().begin(),
                      example.signs().end());
  batch->slots.insert(batch->slots.end(), example.slots().begin(),
                      example.slots().end());
  batch->dense.insert(batch->dense.end(), example.dense().begin(),
                      example.dense().end());
  return absl::OkStatus();
}

}  // namespace

absl::Status RequestToBatch(const serving::PredictRequest& request,
                            const RequestShape& shape, Batch* batch) {
  const size_t n = request.lines_size() + request.examples_size();
  if (request.lines_size() > 0 && request.examples_size() > 0) {
    return absl::InvalidArgumentError(
        "set lines or examples, not both (got " +
        std::to_string(request.lines_size()) + " lines and " +
        std::to_string(request.examples_size()) + " examples)");
  }
  if (n == 0) return absl::InvalidArgumentError("no examples: empty batch");
  if (n > shape.limits.max_examples) {
    return Bad(shape.limits.max_examples,
               absl::StrCat("one too many: expected at most ",
                            shape.limits.max_examples,
                            " examples per request "
                            "(serving.max_examples_per_request), got ",
                            n));
  }
  batch->Clear();
  batch->dense_dim = shape.dense_dim;
  for (size_t i = 0; i < n; ++i) {
    absl::Status s = request.lines_size() > 0
                         ? AddLine(i, request.lines(i), shape, batch)
                         : AddExample(i, request.examples(i), shape, batch);
    if (!s.ok()) return s;
    batch->labels.push_back(0);
    batch->offsets.push_back(uint32_t(batch->signs.size()));
  }
  return absl::OkStatus();
}

absl::Status ScoreRequest(const serving::PredictRequest& request,
                          const ScoringModel& model,
                          const RequestLimits& limits,
                          serving::PredictResponse* response, size_t* hits,
                          size_t* misses, ForkJoinPool* pool) {
  RequestShape shape;
  shape.parse = model.parse;
  shape.fields = model.model->fields();
  shape.dense_dim = DenseDimOf(model.parse);
  shape.limits = limits;
  thread_local Batch batch;
  thread_local ScoringWorkspace ws;
  absl::Status s = RequestToBatch(request, shape, &batch);
  if (!s.ok()) return s;
  response->mutable_probabilities()->Resize(int(batch.size()), 0.0f);
  absl::StatusOr<size_t> found =
      ScoreBatch(model, &batch,
                 response->mutable_probabilities()->mutable_data(), &ws, pool);
  if (!found.ok()) {
    response->clear_probabilities();
    return found.status();
  }
  if (hits != nullptr) *hits = *found;
  if (misses != nullptr) *misses = ws.keys.keys.size() - *found;
  return absl::OkStatus();
}

}  // namespace sampan
