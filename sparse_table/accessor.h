// The CTR accessor: owns a row's value layout and the per-row optimizer
// rules. A row is a fixed run of 32-bit words, typed float:
//
//   [show, click, unseen_days, has_v, w, w_state[sw], v[vw], v_state[sv]]
//
// where sw and sv are the optimizer state sizes for blocks of 1 and dim
// weights (StateFloats) and vw the words of v in the table's row format
// (row_format.h: dim floats for FP32, packed halves or int8 codes with a
// scale otherwise). Every word but v's is a float32 in every format. The
// embedding part (v and v_state) exists only once has_v is 1; until then the
// row is stored short (base_floats()) and v reads as zeros. Callers copy
// rows as words and read them only through the accessor. Stateless and
// immutable after construction: safe to share.
#ifndef SAMPAN_SPARSE_TABLE_ACCESSOR_H_
#define SAMPAN_SPARSE_TABLE_ACCESSOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "sparse_table/sparse_table.h"

namespace sampan {

// Names a row layout (format, embedding dim, optimizer rule) in RocksDB and
// in snapshot and delta files, so that a table never reads rows of another
// layout as its own. Never 0: files written before layouts were recorded
// carry 0, which an FP32 table accepts (it checks row widths as before).
uint32_t RowLayoutCode(const TableOptions& o);
// "INT8 rows, dim 16, ADAGRAD" (or "an unrecorded layout" for 0).
std::string DescribeRowLayout(uint32_t code);
// OK when `found` (a file's or a database's code) fits a table of `o`;
// FailedPrecondition naming `where` and both layouts otherwise.
absl::Status CheckRowLayout(const TableOptions& o, uint32_t found,
                            const std::string& where);

// Floats of optimizer state kept for a block of n weights:
// SGD none; Adagrad one squared-gradient sum per block (as PaddlePaddle's
// sparse Adagrad); Adam m[n], v[n], beta1^t, beta2^t; FTRL z[n], n[n].
uint32_t StateFloats(OptimizerRule rule, uint32_t n);

// A row's two weight blocks: w (one float) and the embedding v (dim).
enum class WeightBlock { kLinear, kEmbedding };

// Sets the optimizer state of a block whose weights `w` already hold their
// initial values. Adagrad's sum starts at initial_accumulator for kLinear and
// embedding_initial_accumulator for kEmbedding; FTRL's z is chosen so that
// its closed form yields w.
void InitState(const TableOptions& o, WeightBlock block, const float* w,
               float* state, uint32_t n);

// One update of n weights with gradient g (L2 is applied here), then the
// weights are clamped to [min_weight, max_weight].
void ApplyRule(const TableOptions& o, float* w, float* state, const float* g,
               uint32_t n);

class CtrAccessor {
 public:
  static constexpr uint32_t kShow = 0, kClick = 1, kUnseen = 2, kHasV = 3,
                            kW = 4;

  explicit CtrAccessor(const TableOptions& options);

  uint32_t pull_dim() const { return 1 + dim_; }
  // Floats of a row with / without its embedding part.
  uint32_t full_floats() const { return full_; }
  uint32_t base_floats() const { return base_; }
  // Floats of `row` that are meaningful (and stored): base or full.
  uint32_t stored_floats(const float* row) const {
    return row[kHasV] != 0 ? full_ : base_;
  }

  // Words of v in this table's format; v_state follows them.
  uint32_t embedding_words() const { return v_words_; }

  // A new row for `key`: zero statistics and w, embedding created when the
  // threshold allows it. Writes full_floats() floats.
  void InitRow(uint64_t key, float* row) const;
  // A fresh row for `key` holding the pulled values [w, v] (v created).
  void FromPulled(uint64_t key, const float* pulled, float* row) const;
  // Fills a full row from `n` stored floats (n must be base or full).
  bool Load(const float* stored, uint32_t n, float* row) const;
  // [w, v] (v zeros until created).
  void Pull(const float* row, float* out) const;
  // Adds show/click, resets unseen age, creates the embedding once the score
  // passes the threshold, and applies the rule to w and (if present) v.
  void Push(uint64_t key, float* row, const float* grad, float show,
            float click) const;
  float Score(const float* row) const;
  // Decays statistics and ages the row; true when it should be deleted.
  bool Shrink(float* row) const;

 private:
  void CreateEmbedding(uint64_t key, float* row) const;
  // Writes v (dim_ floats) into the row's words, rounding once.
  void StoreEmbedding(uint64_t key, const float* v, float* row) const;

  const TableOptions o_;
  const uint32_t dim_;
  const uint32_t w_state_;  // sw
  const uint32_t v_off_;    // index of v's first word
  const uint32_t v_words_;  // vw
  const uint32_t vs_off_;   // index of v_state[0]
  const uint32_t base_;
  const uint32_t full_;
};

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_ACCESSOR_H_
