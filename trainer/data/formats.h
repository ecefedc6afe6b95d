// The training-data text formats and the one line parser of each. Both ways
// of reading a file use them: the streaming reader (criteo_reader.h, `sampan
// run`) and the in-memory loader (dataset.h, `sampan train-local` and
// `sampan eval`), so the same line gives the same example in both.
//
// Formats and the signs they produce (common/hash.h FeatureSign):
//   kCriteo: TSV label, I1..I13 (integers, may be empty or negative),
//     C1..C26 (categorical tokens, usually 8 hex digits, may be empty);
//     kCriteoUnlabeled is the 39-field test form without the label.
//     slot 1..13 (I1..I13): FeatureSign(slot, "s" + v) for v <= 2
//       (negatives included), FeatureSign(slot, "b" + floor(ln(v)^2)) for
//       v > 2 (the Criteo-winning libffm features' transform);
//     slot 14..39 (C1..C26): FeatureSign(slot, token).
//     Empty fields produce no sign, or with empty_field_signs the sign
//     FeatureSign(slot, "") (missingness as a feature, as libffm's Criteo
//     features have it). With int_log_dense the integer fields are also (or,
//     without int_buckets, only) kCriteoIntFields dense inputs
//     sign(x) * log(1 + |x|), 0 when empty.
//   kAvazu: CSV id,click,hour,C1,...,C21 (24 columns; 23 without click,
//     unlabeled); a file's first line starting with "id," is a header.
//     Slot 1 is the hour of day (last two digits of hour), slots 2..22 the
//     21 columns after hour; id is dropped.
//   kLibsvm: "label idx[:val] ..."; every index is a sign of slot 1.
//   kLibffm: "label field:idx[:val] ..."; sign FeatureSign(field + 1, idx) of
//     slot field + 1.
//   For libsvm/libffm a label > 0 is a click; values are not used (features
//   are binary, as hashed CTR features are).
//   kText: one sentence or document per line, tokens separated by ASCII
//     whitespace; token t is FeatureSign(kTextSlot, t) of slot kTextSlot,
//     label 0 (word vectors, trainer/model/word2vec.h). An empty line is an
//     example without signs; a line that is not valid UTF-8 or holds more
//     than kMaxTextTokens tokens is malformed (counted, not trained).
// A trailing CR (a CRLF file) is not part of a line.
//
// Everything here is a pure function: safe from any thread.
#ifndef SAMPAN_TRAINER_DATA_FORMATS_H_
#define SAMPAN_TRAINER_DATA_FORMATS_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace sampan {

enum class DataFileFormat {
  kCriteo,
  kCriteoUnlabeled,
  kAvazu,
  kLibsvm,
  kLibffm,
  kText
};

inline constexpr int kCriteoIntFields = 13;
inline constexpr int kCriteoCatFields = 26;
inline constexpr int kTextSlot = 1;
// Tokens a kText line may hold (fastText cuts lines at 1,024 words; a
// longer line is usually a file without newlines).
inline constexpr size_t kMaxTextTokens = 100000;

// Fields (slots 1..n) a format produces; 0 when the file decides (libffm).
int FieldsOf(DataFileFormat format);

// How lines become examples.
struct ParseOptions {
  DataFileFormat format = DataFileFormat::kCriteo;
  // Criteo only: keep the integer fields' bucket signs (slots 1..13), and
  // add them as kCriteoIntFields dense inputs sign(x) * log(1 + |x|).
  bool int_buckets = true;
  bool int_log_dense = false;
  // Criteo only: an empty field becomes its slot's "empty" sign instead of
  // no sign.
  bool empty_field_signs = false;
};

// Dense inputs per example under `options`: kCriteoIntFields for a Criteo
// format with int_log_dense, else 0.
int DenseDimOf(const ParseOptions& options);

// Whether `line`, the first line of a file, is a header rather than a row
// (Avazu's "id,click,hour,...").
bool IsHeaderLine(std::string_view line, DataFileFormat format);

// Parses one line (without its newline). On success appends the example's
// signs to `signs`, their slots to `slots` and DenseDimOf(options) floats to
// `dense`, and sets `*label` (0 for unlabeled rows). On error changes
// nothing and returns InvalidArgument naming the field ("field I3: expected
// integer, got \"x\"").
absl::Status ParseLine(std::string_view line, const ParseOptions& options,
                       float* label, std::vector<uint64_t>* signs,
                       std::vector<uint16_t>* slots, std::vector<float>* dense);

// kText: calls fn(token) for each whitespace-separated token of `line` once
// the whole line is known good (valid UTF-8, at most kMaxTextTokens tokens);
// else calls nothing and returns InvalidArgument saying why. The one
// tokenizer of the parser and of vocabulary counting.
absl::Status ForEachTextToken(std::string_view line,
                              const std::function<void(std::string_view)>& fn);

// The Criteo parser alone: ParseLine with kCriteo (`labeled`) or
// kCriteoUnlabeled, bucket signs only; `slots` may be null.
absl::Status ParseCriteoLine(std::string_view line, bool labeled, float* label,
                             std::vector<uint64_t>* signs,
                             std::vector<uint16_t>* slots = nullptr,
                             bool empty_field_signs = false);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_DATA_FORMATS_H_
