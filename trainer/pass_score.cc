#include "trainer/pass_score.h"

#include <algorithm>
#include <cmath>

#include "trainer/eval/auc.h"

namespace sampan {
namespace {

// Whether batch `batch` of pass `pass` is in the sample: a splitmix64 hash of
// the two, as a fraction of 2^64.
bool Sampled(uint64_t pass, uint64_t batch, double fraction) {
  if (fraction >= 1) return true;
  uint64_t z = pass * 0x9e3779b97f4a7c15ULL + batch + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z) / 18446744073709551616.0 < fraction;
}

}  // namespace

absl::StatusOr<coord::PassScore> ScorePass(const PassScoreOptions& options,
                                           const std::vector<DataPart>& parts) {
  StreamingAuc auc;
  coord::PassScore score;
  if (options.fraction <= 0) return score;
  double loss = 0, clicks = 0, predicted = 0;
  uint64_t rows = 0, batch = 0;
  Worker w;
  absl::Status s = ReadParts(parts, options.batch_size, &w.batch, [&] {
    if (!Sampled(options.pass_index, batch++, options.fraction)) {
      return absl::OkStatus();
    }
    if (options.rare != nullptr) {
      options.rare->Apply(&w.batch.signs, w.batch.slots);
    }
    absl::Status st = Predict(*options.model, options.rows, options.dense, &w);
    if (!st.ok()) return st;
    for (size_t e = 0; e < w.batch.size(); ++e) {
      const float y = w.batch.labels[e];
      const double p = std::clamp<double>(w.probs[e], 1e-7, 1 - 1e-7);
      auc.Add(w.probs[e], y);
      loss -= y > 0.5f ? std::log(p) : std::log(1 - p);
      clicks += y;
      predicted += w.probs[e];
    }
    rows += w.batch.size();
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  *score.mutable_pos() = {auc.positives().begin(), auc.positives().end()};
  *score.mutable_neg() = {auc.negatives().begin(), auc.negatives().end()};
  score.set_loss_sum(loss);
  score.set_clicks(clicks);
  score.set_predicted(predicted);
  score.set_rows(rows);
  return score;
}

coord::PassResult MergePassScores(const std::vector<coord::PassScore>& scores) {
  StreamingAuc auc;
  double loss = 0, clicks = 0, predicted = 0;
  uint64_t rows = 0;
  for (const coord::PassScore& s : scores) {
    if (s.rows() == 0) continue;
    auc.AddCounts({s.pos().begin(), s.pos().end()},
                  {s.neg().begin(), s.neg().end()});
    loss += s.loss_sum();
    clicks += s.clicks();
    predicted += s.predicted();
    rows += s.rows();
  }
  coord::PassResult r;
  r.set_rows_scored(rows);
  if (rows == 0) return r;
  r.set_auc(auc.Auc());
  r.set_logloss(loss / rows);
  r.set_copc(predicted > 0 ? clicks / predicted : 0);
  return r;
}

}  // namespace sampan
