// Evaluation metrics for binary CTR predictions.
//
// ExactAuc sorts all scores (ties count half), the reference for test sets.
// StreamingAuc keeps a fixed histogram of scores per label, so it costs O(1)
// memory and is cheap enough to run on every training example; its error is
// bounded by the bucket width (ties within a bucket count half).
#ifndef SAMPAN_TRAINER_EVAL_AUC_H_
#define SAMPAN_TRAINER_EVAL_AUC_H_

#include <cstdint>
#include <vector>

namespace sampan {

// Area under the ROC curve; 0.5 when either class is absent.
double ExactAuc(const std::vector<float>& scores,
                const std::vector<float>& labels);

// Mean negative log-likelihood; probabilities are clipped to [1e-7, 1-1e-7].
double LogLoss(const std::vector<float>& probs,
               const std::vector<float>& labels);

// Test-set figures: exact AUC, mean logloss, COPC (clicks over predicted
// clicks; 1 is calibrated, 0 when nothing is predicted) and the row count.
struct EvalMetrics {
  double auc = 0.5, logloss = 0, copc = 0;
  uint64_t rows = 0;
};
EvalMetrics Evaluate(const std::vector<float>& probs,
                     const std::vector<float>& labels);

// Not thread-safe: one per thread, merged with Merge().
class StreamingAuc {
 public:
  explicit StreamingAuc(int buckets = 4096);

  void Add(float prob, float label) {
    int b = static_cast<int>(prob * buckets_);
    b = b < 0 ? 0 : (b >= buckets_ ? buckets_ - 1 : b);
    (label > 0.5f ? pos_ : neg_)[b] += 1;
  }
  void Merge(const StreamingAuc& other);
  void Reset();
  double Auc() const;
  uint64_t count() const;
  // The histograms, per bucket (buckets() each), to send elsewhere.
  int buckets() const { return buckets_; }
  const std::vector<uint64_t>& positives() const { return pos_; }
  const std::vector<uint64_t>& negatives() const { return neg_; }
  // Adds histograms of another StreamingAuc of the same bucket count;
  // false (nothing added) when the sizes differ.
  bool AddCounts(const std::vector<uint64_t>& pos,
                 const std::vector<uint64_t>& neg);

 private:
  int buckets_;
  std::vector<uint64_t> pos_, neg_;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_EVAL_AUC_H_
