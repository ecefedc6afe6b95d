#include "trainer/model/word2vec.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/hash.h"
#include "trainer/data/formats.h"

namespace sampan {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// SplitMix64: a worker's random bits.
uint64_t NextRandom(uint64_t* state) {
  *state += kGolden;
  return Mix64(*state);
}

double Uniform(uint64_t* state) {
  return (NextRandom(state) >> 11) * 0x1.0p-53;
}

// The logistic function and log on [0, 1] by table, as fastText has them:
// exact enough for SGD, and the step's two hottest calls.
class Tables {
 public:
  static constexpr float kMaxLogit = 8;
  static constexpr int kSigmoidSize = 1024;
  static constexpr int kLogSize = 1024;

  Tables() {
    for (int i = 0; i <= kSigmoidSize; ++i) {
      const double x = (2.0 * i / kSigmoidSize - 1) * kMaxLogit;
      sigmoid_[i] = float(1 / (1 + std::exp(-x)));
    }
    for (int i = 0; i <= kLogSize; ++i) {
      log_[i] = float(std::log((i + 1e-5) / kLogSize));
    }
  }
  float Sigmoid(float x) const {
    if (!(x > -kMaxLogit)) return 0;  // NaN too
    if (x >= kMaxLogit) return 1;
    return sigmoid_[int((x + kMaxLogit) * (kSigmoidSize / (2 * kMaxLogit)))];
  }
  float Log(float p) const {
    return p >= 1 ? 0 : log_[int(std::max(p, 0.0f) * kLogSize)];
  }

 private:
  float sigmoid_[kSigmoidSize + 1];
  float log_[kLogSize + 1];
};

const Tables& T() {
  static const Tables* tables = new Tables();
  return *tables;
}

// Eight running sums, so the compiler keeps them in one vector register.
float Dot(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += a[i + k] * b[i + k];
  }
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) +
            ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void Axpy(float* y, float a, const float* x, int n) {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

}  // namespace

uint64_t WordInputKey(std::string_view word) {
  return FeatureSign(kTextSlot, word);
}

uint64_t WordOutputKey(std::string_view word) {
  return FeatureSign(kTextSlot + 1, word);
}

void Vocabulary::Count(std::string_view word) {
  ++tokens_;
  ++counting_[absl::string_view(word.data(), word.size())];
}

void Vocabulary::Finish(uint64_t min_count, double subsample) {
  std::vector<std::pair<std::string, uint64_t>> kept;
  for (auto& [word, n] : counting_) {
    if (n >= min_count) kept.emplace_back(word, n);
  }
  counting_.clear();
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  for (auto& [word, n] : kept) {
    const int32_t id = int32_t(words_.size());
    words_.push_back(word);
    counts_.push_back(n);
    input_keys_.push_back(WordInputKey(word));
    output_keys_.push_back(WordOutputKey(word));
    ids_[input_keys_.back()] = id;
    double keep = 1;
    if (subsample > 0) {
      const double f = double(n) / double(tokens_);
      keep = std::min(1.0, std::sqrt(subsample / f) + subsample / f);
    }
    keep_.push_back(float(keep));
  }
}

NegativeSampler::NegativeSampler(const Vocabulary& vocab, double power) {
  const size_t n = vocab.size();
  p_.resize(n);
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    p_[i] = std::pow(double(vocab.count(int32_t(i))), power);
    total += p_[i];
  }
  prob_.assign(n, 0);
  alias_.assign(n, 0);
  if (n == 0) return;
  // Vose's construction: scaled probabilities, small and large worklists.
  std::vector<double> scaled(n);
  std::vector<int32_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    p_[i] /= total;
    scaled[i] = p_[i] * n;
    (scaled[i] < 1 ? small : large).push_back(int32_t(i));
  }
  while (!small.empty() && !large.empty()) {
    const int32_t s = small.back(), l = large.back();
    small.pop_back();
    prob_[s] = uint32_t(std::min(scaled[s] * 0x1.0p32, 4294967295.0));
    alias_[s] = l;
    scaled[l] -= 1 - scaled[s];
    if (scaled[l] < 1) {
      large.pop_back();
      small.push_back(l);
    }
  }
  // What is left has probability 1 up to rounding: always itself.
  for (int32_t i : large) prob_[i] = 0xffffffffu, alias_[i] = i;
  for (int32_t i : small) prob_[i] = 0xffffffffu, alias_[i] = i;
}

double NegativeSampler::Probability(int32_t id) const { return p_[id]; }

WordModel::WordModel(const Vocabulary* vocab, const WordModelOptions& o)
    : vocab_(vocab),
      negatives_(*vocab),
      dim_(o.dim),
      window_(std::max(1, o.window)),
      negatives_per_target_(o.negatives),
      cbow_(o.cbow),
      rate0_(o.learning_rate),
      planned_lines_(std::max<uint64_t>(1, o.planned_lines)),
      seed_(o.seed),
      lines_(o.start_lines) {}

uint32_t WordModel::InputRow(int32_t id, Workspace* ws,
                             std::vector<uint64_t>* keys,
                             std::vector<float>* shows) const {
  if (ws->in_seen[id] != ws->stamp) {
    ws->in_seen[id] = ws->stamp;
    ws->in_row[id] = uint32_t(keys->size());
    keys->push_back(vocab_->input_key(id));
    shows->push_back(0);
  }
  (*shows)[ws->in_row[id]] += 1;
  return ws->in_row[id];
}

uint32_t WordModel::OutputRow(int32_t id, Workspace* ws,
                              std::vector<uint64_t>* keys,
                              std::vector<float>* shows) const {
  if (ws->out_seen[id] != ws->stamp) {
    ws->out_seen[id] = ws->stamp;
    ws->out_row[id] = uint32_t(keys->size());
    keys->push_back(vocab_->output_key(id));
    shows->push_back(0);
  }
  (*shows)[ws->out_row[id]] += 1;
  return ws->out_row[id];
}

void WordModel::Plan(const Batch& batch, Workspace* ws,
                     std::vector<uint64_t>* keys,
                     std::vector<float>* shows) const {
  if (ws->rng == 0) ws->rng = Mix64(seed_ ^ (++workspaces_ * kGolden)) | 1;
  const uint64_t done = lines_.fetch_add(batch.size());
  ws->rate =
      rate0_ * float(std::max(1e-4, 1 - double(done) / double(planned_lines_)));
  const size_t n_words = vocab_->size();
  if (ws->in_seen.size() != n_words) {
    ws->in_seen.assign(n_words, 0);
    ws->out_seen.assign(n_words, 0);
    ws->in_row.resize(n_words);
    ws->out_row.resize(n_words);
    ws->stamp = 0;
  }
  if (++ws->stamp == 0) {
    std::fill(ws->in_seen.begin(), ws->in_seen.end(), 0);
    std::fill(ws->out_seen.begin(), ws->out_seen.end(), 0);
    ws->stamp = 1;
  }
  keys->clear();
  shows->clear();
  ws->ops.clear();
  ws->tokens = 0;
  ws->updates = 0;
  const auto add_negatives = [&](int32_t target) {
    for (int k = 0; k < negatives_per_target_; ++k) {
      int32_t neg = negatives_.Sample(NextRandom(&ws->rng));
      for (int tries = 0; neg == target && tries < 8; ++tries) {
        neg = negatives_.Sample(NextRandom(&ws->rng));
      }
      ws->ops.push_back(OutputRow(neg, ws, keys, shows));
    }
  };
  for (size_t e = 0; e < batch.size(); ++e) {
    ws->kept.clear();
    for (uint32_t j = batch.offsets[e]; j < batch.offsets[e + 1]; ++j) {
      ++ws->tokens;
      const int32_t id = vocab_->Find(batch.signs[j]);
      if (id < 0) continue;
      if (vocab_->keep(id) < 1 && Uniform(&ws->rng) > vocab_->keep(id)) {
        continue;
      }
      ws->kept.push_back(id);
    }
    const int n = int(ws->kept.size());
    for (int i = 0; i < n; ++i) {
      const int b = 1 + int(NextRandom(&ws->rng) % uint64_t(window_));
      const int lo = std::max(0, i - b), hi = std::min(n - 1, i + b);
      if (hi == lo) continue;  // a line of one kept word
      if (cbow_) {
        ws->ops.push_back(uint32_t(hi - lo));
        for (int c = lo; c <= hi; ++c) {
          if (c != i) ws->ops.push_back(InputRow(ws->kept[c], ws, keys, shows));
        }
        ws->ops.push_back(OutputRow(ws->kept[i], ws, keys, shows));
        add_negatives(ws->kept[i]);
        ++ws->updates;
        continue;
      }
      const uint32_t center = InputRow(ws->kept[i], ws, keys, shows);
      for (int c = lo; c <= hi; ++c) {
        if (c == i) continue;
        ws->ops.push_back(1);
        ws->ops.push_back(center);
        ws->ops.push_back(OutputRow(ws->kept[c], ws, keys, shows));
        add_negatives(ws->kept[c]);
        ++ws->updates;
      }
    }
  }
  ws->rows = keys->size();
}

double WordModel::Train(Workspace* ws, float* rows, float* grads) const {
  const int rd = row_dim();
  const size_t total = ws->rows * rd;
  ws->before.assign(rows, rows + total);
  ws->h.resize(dim_);
  ws->grad_h.resize(dim_);
  const Tables& t = T();
  const float rate = ws->rate;
  double loss = 0;
  const uint32_t* op = ws->ops.data();
  const uint32_t* end = op + ws->ops.size();
  while (op < end) {
    const uint32_t n = *op++;
    const uint32_t* in = op;
    op += n;
    const float* h;
    if (n == 1) {
      h = rows + size_t(in[0]) * rd + 1;
    } else {
      std::fill(ws->h.begin(), ws->h.end(), 0.0f);
      for (uint32_t k = 0; k < n; ++k) {
        Axpy(ws->h.data(), 1.0f, rows + size_t(in[k]) * rd + 1, dim_);
      }
      const float scale = 1.0f / float(n);
      for (float& x : ws->h) x *= scale;
      h = ws->h.data();
    }
    float* grad_h = ws->grad_h.data();
    std::fill(grad_h, grad_h + dim_, 0.0f);
    for (int k = 0; k <= negatives_per_target_; ++k) {
      float* o = rows + size_t(*op++) * rd + 1;
      const float label = k == 0 ? 1.0f : 0.0f;
      const float p = t.Sigmoid(Dot(h, o, dim_));
      const float g = rate * (label - p);
      loss -= k == 0 ? t.Log(p) : t.Log(1 - p);
      Axpy(grad_h, g, o, dim_);
      Axpy(o, g, h, dim_);
    }
    for (uint32_t k = 0; k < n; ++k) {
      Axpy(rows + size_t(in[k]) * rd + 1, 1.0f, grad_h, dim_);
    }
  }
  const float inv = 1.0f / rate0_;
  for (size_t i = 0; i < total; ++i) grads[i] = (ws->before[i] - rows[i]) * inv;
  return loss;
}

}  // namespace sampan
