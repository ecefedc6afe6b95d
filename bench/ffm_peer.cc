// A peer for the Criteo AUC targets: the training loop of libffm (Juan et
// al., "Field-aware Factorization Machines for CTR Prediction", RecSys 2016)
// with the Criteo-winning features, written from the paper, on the same
// split model_train_bench uses (train on the first 1 - holdout of the file's
// lines, test on the rest). It answers "what does a tuned field-aware FM
// reach on *this* split?", which SOURCES.md's figures (other test rows) do
// not.
//
// Algorithm, as libffm: one example at a time in a shuffled order; AdaGrad
// per coordinate with the squared-gradient sums starting at 1; weights start
// uniform in [0, 1/sqrt(k)); an L2 term lambda * w on every touched weight;
// optional instance normalisation (pair terms scaled by 1/fields). FFM and
// FM have no linear term (as libffm); LR is the linear term alone.
// Features: every field gives one token "field:value", empty values too;
// integers v > 2 become "L" + floor(ln(v)^2); tokens seen fewer than
// --min_count times in training share one rare token per field.
//
//   ffm_peer --data=criteo.tsv.gz --model=ffm|fm|lr [--k=4 --eta=0.2
//     --lambda=2e-5 --epochs=10 --min_count=10 --norm --holdout=0.1]
//
// Prints the test AUC and logloss after every epoch, then the best epoch.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/flags.h"
#include "trainer/data/dataset.h"
#include "trainer/eval/auc.h"

namespace sampan {
namespace {

constexpr int kFields = 39;

struct Example {
  float y;  // +1 click, -1 not
  int feature[kFields];
};

std::string Token(int field, absl::string_view value) {
  int64_t v = 0;
  if (field < 13 && absl::SimpleAtoi(value, &v) && v > 2) {
    const double l = std::log(static_cast<double>(v));
    return absl::StrCat(field, ":L", static_cast<int64_t>(l * l));
  }
  return absl::StrCat(field, ":", value);
}

// Tokens per line; false for a line without 40 fields.
bool Tokenize(absl::string_view line, float* y,
              std::vector<std::string>* tokens) {
  std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
  if (f.size() != kFields + 1) return false;
  *y = f[0] == "1" ? 1.0f : -1.0f;
  tokens->clear();
  for (int i = 0; i < kFields; ++i) tokens->push_back(Token(i, f[i + 1]));
  return true;
}

class Model {
 public:
  // kind: 0 ffm, 1 fm, 2 lr.
  Model(int kind, int features, int k, uint32_t seed)
      : kind_(kind),
        k_(kind == 2 ? 1 : k),
        per_feature_(kind == 0 ? kFields : 1),
        w_(size_t(features) * per_feature_ * k_),
        g_(w_.size(), 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(0, 1.0f / std::sqrt(float(k_)));
    for (float& w : w_) w = kind == 2 ? 0.0f : u(rng);
  }

  // Returns phi(x); with eta > 0 first takes the AdaGrad step for the
  // logistic loss, kappa = d loss / d phi, computed against the old weights.
  double Phi(const Example& e, float r) const {
    double t = 0;
    if (kind_ == 2) {
      for (int a = 0; a < kFields; ++a) t += w_[e.feature[a]];
      return t;
    }
    for (int a = 0; a < kFields; ++a) {
      for (int b = a + 1; b < kFields; ++b) {
        const float* w1 = &w_[At(e.feature[a], b)];
        const float* w2 = &w_[At(e.feature[b], a)];
        for (int d = 0; d < k_; ++d) t += w1[d] * w2[d] * r;
      }
    }
    return t;
  }

  void Update(const Example& e, float r, float kappa, float eta, float lambda) {
    if (kind_ == 2) {
      for (int a = 0; a < kFields; ++a) Step(e.feature[a], kappa, eta, lambda);
      return;
    }
    for (int a = 0; a < kFields; ++a) {
      for (int b = a + 1; b < kFields; ++b) {
        const size_t i1 = At(e.feature[a], b), i2 = At(e.feature[b], a);
        for (int d = 0; d < k_; ++d) {
          const float g1 = lambda * w_[i1 + d] + kappa * w_[i2 + d] * r;
          const float g2 = lambda * w_[i2 + d] + kappa * w_[i1 + d] * r;
          g_[i1 + d] += g1 * g1;
          g_[i2 + d] += g2 * g2;
          w_[i1 + d] -= eta / std::sqrt(g_[i1 + d]) * g1;
          w_[i2 + d] -= eta / std::sqrt(g_[i2 + d]) * g2;
        }
      }
    }
  }

 private:
  // Where feature j's latent vector for the other field f starts.
  size_t At(int j, int f) const {
    return (size_t(j) * per_feature_ + (kind_ == 0 ? f : 0)) * k_;
  }
  void Step(size_t i, float kappa, float eta, float lambda) {
    const float g = lambda * w_[i] + kappa;
    g_[i] += g * g;
    w_[i] -= eta / std::sqrt(g_[i]) * g;
  }

  int kind_, k_, per_feature_;
  std::vector<float> w_, g_;
};

int Main(int argc, char** argv) {
  auto flags = Flags::Parse(argc, argv, 1,
                            {"data", "model", "k", "eta", "lambda", "epochs",
                             "min_count", "norm", "holdout", "seed"});
  if (!flags.ok() || !flags->Has("data")) {
    std::fprintf(stderr, "usage: ffm_peer --data=FILE [--model=ffm|fm|lr]\n");
    return 2;
  }
  const Flags& f = *flags;
  auto num = [&](const char* name, double def) {
    double v = def;
    if (f.Has(name) && !absl::SimpleAtod(f.Get(name), &v)) {
      std::fprintf(stderr, "--%s: expected a number\n", name);
      std::exit(2);
    }
    return v;
  };
  const std::string kind_name = f.Get("model", "ffm");
  const int kind = kind_name == "ffm" ? 0 : kind_name == "fm" ? 1 : 2;
  const int k = num("k", 4), epochs = num("epochs", 10);
  const int min_count = num("min_count", 10);
  const float eta = num("eta", 0.2), lambda = num("lambda", 2e-5);
  const float r = f.GetBool("norm") && kind != 2 ? 1.0f / kFields : 1.0f;

  auto text = ReadMaybeGzipFile(f.Get("data"));
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", std::string(text.status().message()).c_str());
    return 1;
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<float> labels;
  for (absl::string_view line :
       absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
    float y;
    std::vector<std::string> tokens;
    if (!Tokenize(line, &y, &tokens)) continue;
    rows.push_back(std::move(tokens));
    labels.push_back(y);
  }
  const size_t train = rows.size() * (1 - num("holdout", 0.1));
  absl::flat_hash_map<std::string, int> count, id;
  for (size_t i = 0; i < train; ++i) {
    for (const std::string& t : rows[i]) ++count[t];
  }
  std::vector<Example> ex(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ex[i].y = labels[i];
    for (int a = 0; a < kFields; ++a) {
      auto c = count.find(rows[i][a]);
      const std::string& t = c != count.end() && c->second >= min_count
                                 ? rows[i][a]
                                 : absl::StrCat(a, ":__rare__");
      ex[i].feature[a] = id.emplace(t, int(id.size())).first->second;
    }
  }
  Model model(kind, int(id.size()), k, num("seed", 1));
  std::mt19937 rng(num("seed", 1));
  std::vector<uint32_t> order(train);
  for (size_t i = 0; i < train; ++i) order[i] = i;
  double best = 0;
  int best_epoch = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    for (uint32_t i : order) {
      const double t = model.Phi(ex[i], r);
      const float kappa = -ex[i].y / (1 + std::exp(ex[i].y * t));
      model.Update(ex[i], r, kappa, eta, lambda);
    }
    std::vector<float> scores, probs, y01;
    for (size_t i = train; i < ex.size(); ++i) {
      const double t = model.Phi(ex[i], r);
      scores.push_back(t);
      probs.push_back(1 / (1 + std::exp(-t)));
      y01.push_back(ex[i].y > 0);
    }
    const double auc = ExactAuc(scores, y01);
    if (auc > best) best = auc, best_epoch = epoch;
    std::printf("epoch=%d test_auc=%.4f logloss=%.4f\n", epoch, auc,
                LogLoss(probs, y01));
    std::fflush(stdout);
  }
  std::printf(
      "model=%s train=%zu test=%zu features=%zu best_epoch=%d "
      "best_test_auc=%.4f\n",
      kind_name.c_str(), train, ex.size() - train, id.size(), best_epoch, best);
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) { return sampan::Main(argc, argv); }
