#include "trainer/eval/auc.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace sampan {

double ExactAuc(const std::vector<float>& scores,
                const std::vector<float>& labels) {
  const size_t n = scores.size();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return scores[a] < scores[b]; });
  // Sum of positive ranks (1-based, ties share their mean rank).
  double pos = 0, rank_sum = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && scores[order[j]] == scores[order[i]]) ++j;
    const double mean_rank = (i + 1 + j) / 2.0;
    for (size_t k = i; k < j; ++k) {
      if (labels[order[k]] > 0.5f) {
        pos += 1;
        rank_sum += mean_rank;
      }
    }
    i = j;
  }
  const double neg = n - pos;
  if (pos == 0 || neg == 0) return 0.5;
  return (rank_sum - pos * (pos + 1) / 2) / (pos * neg);
}

double LogLoss(const std::vector<float>& probs,
               const std::vector<float>& labels) {
  if (probs.empty()) return 0;
  double sum = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double p = std::clamp<double>(probs[i], 1e-7, 1 - 1e-7);
    sum -= labels[i] > 0.5f ? std::log(p) : std::log(1 - p);
  }
  return sum / probs.size();
}

StreamingAuc::StreamingAuc(int buckets)
    : buckets_(buckets), pos_(buckets), neg_(buckets) {}

void StreamingAuc::Merge(const StreamingAuc& other) {
  for (int i = 0; i < buckets_; ++i) {
    pos_[i] += other.pos_[i];
    neg_[i] += other.neg_[i];
  }
}

bool StreamingAuc::AddCounts(const std::vector<uint64_t>& pos,
                             const std::vector<uint64_t>& neg) {
  if (pos.size() != pos_.size() || neg.size() != neg_.size()) return false;
  for (int i = 0; i < buckets_; ++i) {
    pos_[i] += pos[i];
    neg_[i] += neg[i];
  }
  return true;
}

void StreamingAuc::Reset() {
  std::fill(pos_.begin(), pos_.end(), 0);
  std::fill(neg_.begin(), neg_.end(), 0);
}

uint64_t StreamingAuc::count() const {
  return std::accumulate(pos_.begin(), pos_.end(), uint64_t{0}) +
         std::accumulate(neg_.begin(), neg_.end(), uint64_t{0});
}

double StreamingAuc::Auc() const {
  // Walk buckets from low to high score: each positive beats every negative
  // in lower buckets and ties half of those in its own.
  double neg_below = 0, area = 0, total_pos = 0;
  for (int i = 0; i < buckets_; ++i) {
    area += pos_[i] * (neg_below + neg_[i] / 2.0);
    neg_below += neg_[i];
    total_pos += pos_[i];
  }
  if (total_pos == 0 || neg_below == 0) return 0.5;
  return area / (total_pos * neg_below);
}

EvalMetrics Evaluate(const std::vector<float>& probs,
                     const std::vector<float>& labels) {
  EvalMetrics m;
  m.rows = probs.size();
  m.auc = ExactAuc(probs, labels);
  m.logloss = LogLoss(probs, labels);
  double predicted = 0, clicks = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    predicted += probs[i];
    clicks += labels[i];
  }
  m.copc = predicted > 0 ? clicks / predicted : 0.0;
  return m;
}

}  // namespace sampan
