#include "trainer/rank_progress.h"

namespace sampan {

void RankProgress::Trained(const Worker& w, double loss) {
  if (keep_keys_) {
    std::lock_guard<std::mutex> lock(keys_mu_);
    keys_.insert(w.keys.begin(), w.keys.end());
  }
  std::lock_guard<std::mutex> lock(mu_);
  examples_ += w.batch.size();
  loss_sum_ += loss;
  tokens_ += w.words.tokens;  // word vectors: no probabilities
  for (size_t e = 0; e < w.probs.size(); ++e) {
    auc_.Add(w.probs[e], w.batch.labels[e]);
  }
}

std::vector<uint64_t> RankProgress::TakeKeys() {
  std::lock_guard<std::mutex> lock(keys_mu_);
  std::vector<uint64_t> keys(keys_.begin(), keys_.end());
  keys_.clear();
  return keys;
}

void RankProgress::PassDone(coord::PassResult* result) {
  std::lock_guard<std::mutex> lock(mu_);
  ++passes_done_;
  if (result != nullptr) {
    result->set_examples(examples_);
    last_result_ = *result;
  }
}

uint64_t RankProgress::examples() const {
  std::lock_guard<std::mutex> lock(mu_);
  return examples_;
}

uint64_t RankProgress::tokens() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tokens_;
}

void RankProgress::Fail(const absl::Status& status) {
  if (status.ok()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (error_.ok()) error_ = status;
  failed_.store(true);
}

absl::Status RankProgress::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void RankProgress::Fill(coord::TrainerProgress* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  p->set_examples(examples_);
  p->set_loss_sum(loss_sum_);
  p->set_train_auc(auc_.Auc());
  p->set_passes_done(passes_done_);
  if (last_result_.has_value()) *p->mutable_last_result() = *last_result_;
}

}  // namespace sampan
