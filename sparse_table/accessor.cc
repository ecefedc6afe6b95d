#include "sparse_table/accessor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/base/casts.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "common/row_format.h"

namespace sampan {
namespace {

void Clamp(const TableOptions& o, float* w, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    w[i] = std::min(std::max(w[i], o.min_weight), o.max_weight);
  }
}

void Sgd(const TableOptions& o, float* w, const float* g, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    w[i] -= o.learning_rate * (g[i] + o.l2 * w[i]);
  }
}

// One squared-gradient sum per block, grown by the mean square: the row stays
// small and per-entry sums gain little on sparse features.
void Adagrad(const TableOptions& o, float* w, float* g2, const float* g,
             uint32_t n) {
  float sq = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const float gi = g[i] + o.l2 * w[i];
    sq += gi * gi;
  }
  *g2 += sq / n;
  const float scale = o.learning_rate / std::sqrt(*g2);
  for (uint32_t i = 0; i < n; ++i) w[i] -= scale * (g[i] + o.l2 * w[i]);
}

// state = m[n], v[n], beta1^t, beta2^t (bias correction as in Kingma & Ba).
void Adam(const TableOptions& o, float* w, float* state, const float* g,
          uint32_t n) {
  float* m = state;
  float* v = state + n;
  float& b1p = state[2 * n];
  float& b2p = state[2 * n + 1];
  b1p *= o.beta1;
  b2p *= o.beta2;
  for (uint32_t i = 0; i < n; ++i) {
    const float gi = g[i] + o.l2 * w[i];
    m[i] = o.beta1 * m[i] + (1 - o.beta1) * gi;
    v[i] = o.beta2 * v[i] + (1 - o.beta2) * gi * gi;
    const float m_hat = m[i] / (1 - b1p), v_hat = v[i] / (1 - b2p);
    w[i] -= o.learning_rate * m_hat / (std::sqrt(v_hat) + o.epsilon);
  }
}

float FtrlWeight(const TableOptions& o, float z, float n) {
  if (std::abs(z) <= o.l1) return 0;
  const float sign = z < 0 ? -1.0f : 1.0f;
  return -(z - sign * o.l1) /
         ((o.ftrl_beta + std::sqrt(n)) / o.learning_rate + o.l2);
}

// FTRL-proximal (McMahan et al. 2013), alpha = learning_rate.
void Ftrl(const TableOptions& o, float* w, float* state, const float* g,
          uint32_t n) {
  float* z = state;
  float* nn = state + n;
  for (uint32_t i = 0; i < n; ++i) {
    const float sigma =
        (std::sqrt(nn[i] + g[i] * g[i]) - std::sqrt(nn[i])) / o.learning_rate;
    z[i] += g[i] - sigma * w[i];
    nn[i] += g[i] * g[i];
    w[i] = FtrlWeight(o, z[i], nn[i]);
  }
}

const char* RuleName(OptimizerRule rule) {
  switch (rule) {
    case OptimizerRule::kSgd:
      return "SGD";
    case OptimizerRule::kAdagrad:
      return "ADAGRAD";
    case OptimizerRule::kAdam:
      return "ADAM";
    case OptimizerRule::kFtrl:
      return "FTRL";
  }
  return "?";
}

// A row's v decoded to float32 (dim floats) for an update.
using Weights = absl::InlinedVector<float, 64>;

}  // namespace

uint32_t RowLayoutCode(const TableOptions& o) {
  // Without v (LR) every format stores the same words.
  const RowFormat format =
      o.embedding_dim == 0 ? RowFormat::kFp32 : o.row_format;
  return (static_cast<uint32_t>(format) + 1) |
         (static_cast<uint32_t>(o.rule) + 1) << 4 | o.embedding_dim << 8;
}

std::string DescribeRowLayout(uint32_t code) {
  if (code == 0) return "an unrecorded layout (written before row formats)";
  const uint32_t format = (code & 0xf) - 1, rule = ((code >> 4) & 0xf) - 1;
  return absl::StrCat(
      format <= 2 ? RowFormatName(static_cast<RowFormat>(format)) : "?",
      " rows, dim ", code >> 8, ", ",
      rule <= 3 ? RuleName(static_cast<OptimizerRule>(rule)) : "?");
}

absl::Status CheckRowLayout(const TableOptions& o, uint32_t found,
                            const std::string& where) {
  const uint32_t want = RowLayoutCode(o);
  const bool fp32 = (want & 0xf) == static_cast<uint32_t>(RowFormat::kFp32) + 1;
  if (found == want || (found == 0 && fp32)) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      where, " holds ", DescribeRowLayout(found), "; table '", o.table_name,
      "' is configured for ", DescribeRowLayout(want),
      ". A table keeps its row layout for life: keep table.row_format, "
      "model.embedding_dim and table.optimizer.type, or start a new table "
      "(another data_dir or output_dir)"));
}

uint32_t StateFloats(OptimizerRule rule, uint32_t n) {
  if (n == 0) return 0;
  switch (rule) {
    case OptimizerRule::kSgd:
      return 0;
    case OptimizerRule::kAdagrad:
      return 1;
    case OptimizerRule::kAdam:
      return 2 * n + 2;
    case OptimizerRule::kFtrl:
      return 2 * n;
  }
  return 0;
}

void InitState(const TableOptions& o, WeightBlock block, const float* w,
               float* state, uint32_t n) {
  if (n == 0) return;
  switch (o.rule) {
    case OptimizerRule::kSgd:
      return;
    case OptimizerRule::kAdagrad:
      state[0] = block == WeightBlock::kLinear
                     ? o.initial_accumulator
                     : o.embedding_initial_accumulator;
      return;
    case OptimizerRule::kAdam:
      std::fill(state, state + 2 * n, 0.0f);
      state[2 * n] = state[2 * n + 1] = 1.0f;
      return;
    case OptimizerRule::kFtrl:
      // z such that FtrlWeight(z, 0) == w: keeps the random initial
      // embedding instead of collapsing it to zero on the first update.
      for (uint32_t i = 0; i < n; ++i) {
        const float sign = w[i] < 0 ? -1.0f : (w[i] > 0 ? 1.0f : 0.0f);
        state[i] = -w[i] * (o.ftrl_beta / o.learning_rate + o.l2) - sign * o.l1;
        state[n + i] = 0;
      }
      return;
  }
}

void ApplyRule(const TableOptions& o, float* w, float* state, const float* g,
               uint32_t n) {
  if (n == 0) return;
  switch (o.rule) {
    case OptimizerRule::kSgd:
      Sgd(o, w, g, n);
      break;
    case OptimizerRule::kAdagrad:
      Adagrad(o, w, state, g, n);
      break;
    case OptimizerRule::kAdam:
      Adam(o, w, state, g, n);
      break;
    case OptimizerRule::kFtrl:
      Ftrl(o, w, state, g, n);
      break;
  }
  Clamp(o, w, n);
}

CtrAccessor::CtrAccessor(const TableOptions& options)
    : o_(options),
      dim_(options.embedding_dim),
      w_state_(StateFloats(options.rule, 1)),
      v_off_(kW + 1 + w_state_),
      v_words_(EmbeddingWords(options.row_format, dim_)),
      vs_off_(v_off_ + v_words_),
      base_(v_off_),
      full_(dim_ == 0 ? v_off_ : vs_off_ + StateFloats(options.rule, dim_)) {}

void CtrAccessor::StoreEmbedding(uint64_t key, const float* v,
                                 float* row) const {
  // The seed depends on the row's history only (key, statistics, w), so a
  // replayed push rounds as the first application did.
  const uint64_t seed = Mix64(
      key ^
      (uint64_t{absl::bit_cast<uint32_t>(row[kShow])} << 32 |
       absl::bit_cast<uint32_t>(row[kClick])) ^
      uint64_t{absl::bit_cast<uint32_t>(row[kW])} * 0x9e3779b97f4a7c15ULL);
  EncodeEmbedding(o_.row_format, o_.rounding, seed, v, dim_, row + v_off_);
}

void CtrAccessor::InitRow(uint64_t key, float* row) const {
  std::fill(row, row + full_, 0.0f);
  InitState(o_, WeightBlock::kLinear, row + kW, row + kW + 1, 1);
  if (Score(row) >= o_.embedx_threshold) CreateEmbedding(key, row);
}

void CtrAccessor::CreateEmbedding(uint64_t key, float* row) const {
  if (dim_ == 0) return;
  row[kHasV] = 1;
  Weights v(dim_);
  uint64_t state = key;
  for (uint32_t j = 0; j < dim_; ++j) {
    state += 0x9e3779b97f4a7c15ULL;
    const double unit = (Mix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
    v[j] = static_cast<float>((2 * unit - 1) * o_.init_range);
  }
  InitState(o_, WeightBlock::kEmbedding, v.data(), row + vs_off_, dim_);
  StoreEmbedding(key, v.data(), row);
}

void CtrAccessor::FromPulled(uint64_t key, const float* pulled,
                             float* row) const {
  std::fill(row, row + full_, 0.0f);
  row[kW] = pulled[0];
  InitState(o_, WeightBlock::kLinear, row + kW, row + kW + 1, 1);
  if (dim_ == 0) return;
  row[kHasV] = 1;
  InitState(o_, WeightBlock::kEmbedding, pulled + 1, row + vs_off_, dim_);
  StoreEmbedding(key, pulled + 1, row);
}

bool CtrAccessor::Load(const float* stored, uint32_t n, float* row) const {
  if (n != base_ && n != full_) return false;
  std::memcpy(row, stored, n * sizeof(float));
  if (n == base_) {
    std::fill(row + base_, row + full_, 0.0f);
    row[kHasV] = 0;
  } else if (dim_ > 0 && row[kHasV] == 0) {
    return false;
  }
  return true;
}

void CtrAccessor::Pull(const float* row, float* out) const {
  out[0] = row[kW];
  if (dim_ == 0) return;
  if (row[kHasV] != 0) {
    DecodeEmbedding(o_.row_format, row + v_off_, dim_, out + 1);
  } else {
    std::fill(out + 1, out + 1 + dim_, 0.0f);
  }
}

void CtrAccessor::Push(uint64_t key, float* row, const float* grad, float show,
                       float click) const {
  row[kShow] += show;
  row[kClick] += click;
  row[kUnseen] = 0;
  // v is trained from the push after it is created: the gradient in this
  // push was computed against zeros, not against the new random v.
  const bool had_v = row[kHasV] != 0;
  ApplyRule(o_, row + kW, row + kW + 1, grad, 1);
  if (had_v && o_.row_format == RowFormat::kFp32) {
    ApplyRule(o_, row + v_off_, row + vs_off_, grad + 1, dim_);
  } else if (had_v) {
    // Updated in float32, rounded once.
    Weights v(dim_);
    DecodeEmbedding(o_.row_format, row + v_off_, dim_, v.data());
    ApplyRule(o_, v.data(), row + vs_off_, grad + 1, dim_);
    StoreEmbedding(key, v.data(), row);
  } else if (dim_ > 0 && Score(row) >= o_.embedx_threshold) {
    CreateEmbedding(key, row);
  }
}

float CtrAccessor::Score(const float* row) const {
  return (row[kShow] - row[kClick]) * o_.nonclk_coeff +
         row[kClick] * o_.click_coeff;
}

bool CtrAccessor::Shrink(float* row) const {
  row[kShow] *= o_.show_decay_rate;
  row[kClick] *= o_.show_decay_rate;
  row[kUnseen] += 1;
  return Score(row) < o_.delete_threshold ||
         row[kUnseen] > static_cast<float>(o_.delete_after_unseen_days);
}

}  // namespace sampan
