#include "trainer/data/synthetic.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/civil_time.h"
#include "common/hash.h"
#include "trainer/eval/auc.h"

namespace sampan {
namespace {

constexpr int kIntSlots = 13;
constexpr int kCatSlots = 26;
constexpr int kLatentDim = 4;

// SplitMix64: tiny, fast and identical on every platform. Only IEEE double
// arithmetic and std::log/std::exp/std::cos/std::sqrt turn its output into
// floating-point draws, so the data do not depend on a standard library's
// distribution classes.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return Mix64(state_);
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Standard normal by Box-Muller (one of the pair is dropped: simple and
  // stateless).
  double Normal() {
    const double u1 = 1.0 - Uniform();  // (0, 1]
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// Categorical slots C1..C26: vocabulary size, fraction of empty fields and
// the spread of the per-value weights. Sizes follow the shape of the Criteo
// cardinalities, scaled down so that one pass over ~1M rows sees most of the
// probability mass often enough to learn it.
struct CatSlotSpec {
  uint32_t vocab;
  double empty;
  double sigma;
};
constexpr CatSlotSpec kCatSpecs[kCatSlots] = {
    {1000, 0.0, 0.30},   {500, 0.0, 0.30},    {50000, 0.03, 0.35},
    {30000, 0.03, 0.30}, {300, 0.0, 0.25},    {24, 0.10, 0.30},
    {10000, 0.0, 0.30},  {600, 0.0, 0.20},    {3, 0.0, 0.20},
    {40000, 0.0, 0.30},  {5000, 0.0, 0.30},   {50000, 0.03, 0.35},
    {3000, 0.0, 0.25},   {27, 0.0, 0.30},     {15000, 0.0, 0.30},
    {40000, 0.03, 0.30}, {10, 0.0, 0.30},     {5000, 0.0, 0.25},
    {2000, 0.15, 0.30},  {4, 0.15, 0.20},     {50000, 0.03, 0.30},
    {18, 0.20, 0.25},    {15, 0.0, 0.25},     {30000, 0.03, 0.30},
    {100, 0.15, 0.30},   {20000, 0.15, 0.30},
};
constexpr double kZipfExponent = 1.1;
constexpr double kTailRank = 300.0;

// Integer slots I1..I13: value = floor(exp(mu + sd * z) - 0.5), empty with
// probability `empty`, -1 with probability `negative`. The weight of a value
// is a smooth function of its reader bucket (see criteo_reader.h).
struct IntSlotSpec {
  double mu, sd, empty, negative, amplitude;
};
constexpr IntSlotSpec kIntSpecs[kIntSlots] = {
    {0.8, 1.2, 0.40, 0.0, 0.35}, {2.5, 2.0, 0.0, 0.03, 0.30},
    {1.5, 1.5, 0.20, 0.0, 0.25}, {1.5, 1.0, 0.20, 0.0, 0.25},
    {7.5, 2.0, 0.03, 0.0, 0.35}, {4.0, 1.8, 0.20, 0.0, 0.30},
    {2.0, 1.5, 0.05, 0.0, 0.35}, {2.0, 1.0, 0.0, 0.0, 0.20},
    {3.5, 1.3, 0.05, 0.0, 0.30}, {0.3, 0.6, 0.40, 0.0, 0.30},
    {1.0, 0.9, 0.05, 0.0, 0.35}, {0.3, 1.0, 0.70, 0.0, 0.20},
    {1.5, 1.2, 0.20, 0.0, 0.25},
};

// Slot pairs (0-based categorical slots) that interact through latent
// vectors, and the spread of the vectors' components.
constexpr int kPairs[][2] = {{5, 13}, {4, 16}, {0, 22}, {8, 12}};
constexpr int kNumPairs = sizeof(kPairs) / sizeof(kPairs[0]);
constexpr double kLatentSigma = 0.45;
constexpr double kMainScale = 1.1;

constexpr double kBias = -1.6;

// The reader's bucket of an integer value (criteo_reader.h).
int64_t Bucket(int64_t v) {
  if (v <= 2) return v;
  const double l = std::log(static_cast<double>(v));
  return static_cast<int64_t>(std::floor(l * l));
}

struct CatSlot {
  std::vector<double> cdf;      // cdf[i] = P(rank <= i)
  std::vector<uint32_t> guide;  // guide[k] = first i with cdf[i] > k / size
  std::vector<float> weight;    // per value
  std::vector<char> tokens;     // 8 hex digits per value
  std::vector<float> latent;    // kLatentDim per value, or empty
  double empty = 0;

  uint32_t Sample(double u) const {
    uint32_t i = guide[static_cast<size_t>(u * guide.size())];
    while (cdf[i] <= u && i + 1 < cdf.size()) ++i;
    return i;
  }
};

struct Model {
  CatSlot cat[kCatSlots];
  // Bucket weights for buckets -1 .. kMaxBucket, indexed by bucket + 1.
  static constexpr int kMaxBucket = 400;
  std::vector<float> bucket_weight[kIntSlots];
};

void MakeModel(uint64_t seed, uint32_t vocab_scale, Model* m) {
  Rng rng(Mix64(seed ^ 0x5eed0f0de1ULL));
  static const char kHex[] = "0123456789abcdef";
  for (int s = 0; s < kCatSlots; ++s) {
    const CatSlotSpec& spec = kCatSpecs[s];
    CatSlot& c = m->cat[s];
    c.empty = spec.empty;
    const uint32_t n = spec.vocab * std::max<uint32_t>(1, vocab_scale);
    c.cdf.resize(n);
    double total = 0;
    for (uint32_t i = 0; i < n; ++i) {
      total += std::pow(static_cast<double>(i + 1), -kZipfExponent);
      c.cdf[i] = total;
    }
    for (uint32_t i = 0; i < n; ++i) c.cdf[i] /= total;
    c.cdf[n - 1] = 1.0;
    c.guide.resize(n);
    uint32_t i = 0;
    for (uint32_t k = 0; k < n; ++k) {
      const double threshold = static_cast<double>(k) / n;
      while (c.cdf[i] <= threshold && i + 1 < n) ++i;
      c.guide[k] = i;
    }
    // Weights, centred so that the slot's expected contribution is zero.
    c.weight.resize(n);
    double mean = 0;
    for (uint32_t v = 0; v < n; ++v) {
      // Rare values carry smaller weights, so that most of the signal sits
      // where a one-pass learner sees enough examples to find it.
      const double scale = 1.0 / std::sqrt(1.0 + v / kTailRank);
      c.weight[v] =
          static_cast<float>(kMainScale * spec.sigma * scale * rng.Normal());
      const double p = c.cdf[v] - (v == 0 ? 0.0 : c.cdf[v - 1]);
      mean += p * c.weight[v];
    }
    for (uint32_t v = 0; v < n; ++v) {
      c.weight[v] = static_cast<float>(c.weight[v] - mean);
    }
    c.tokens.resize(size_t{n} * 8);
    for (uint32_t v = 0; v < n; ++v) {
      const uint32_t token = static_cast<uint32_t>(
          Fmix64((uint64_t{static_cast<uint32_t>(s) + 14} << 32) ^ v ^
                 0x51d7e71c00000000ULL) >>
          32);
      for (int d = 0; d < 8; ++d) {
        c.tokens[size_t{v} * 8 + d] = kHex[(token >> (28 - 4 * d)) & 0xf];
      }
    }
  }
  for (const auto& pair : kPairs) {
    for (int side = 0; side < 2; ++side) {
      CatSlot& c = m->cat[pair[side]];
      if (!c.latent.empty()) continue;
      c.latent.resize(c.weight.size() * kLatentDim);
      for (float& x : c.latent)
        x = static_cast<float>(kLatentSigma * rng.Normal());
    }
  }
  for (int s = 0; s < kIntSlots; ++s) {
    const IntSlotSpec& spec = kIntSpecs[s];
    // A smooth, monotone-ish response in log(value), centred at the median,
    // with a random direction and a little per-bucket noise.
    const double sign = rng.Uniform() < 0.5 ? -1.0 : 1.0;
    const double width = 0.5 + rng.Uniform();
    std::vector<float>& w = m->bucket_weight[s];
    w.resize(Model::kMaxBucket + 2);
    for (int b = -1; b <= Model::kMaxBucket; ++b) {
      const double x = std::sqrt(std::max(b, 0));  // ~ log(value)
      w[b + 1] =
          static_cast<float>(kMainScale * sign * spec.amplitude *
                                 std::tanh((x - spec.mu) / (width * spec.sd)) +
                             0.05 * rng.Normal());
    }
  }
}

// Draws one row into *end (advanced past its newline; the row starts with
// its label) and returns its planted probability. `offset` (may be null)
// rotates each categorical slot's values: rank i of slot s draws value
// (i + offset[s]) % vocabulary, so a stream's popular values drift.
double MakeRow(const Model& model, const uint32_t* offset, Rng* rng, char** end,
               bool* positive) {
  uint32_t value[kCatSlots];
  bool present[kCatSlots];
  char* const row = *end;
  double logit = kBias;
  char* p = row + 1;  // row[0] is the label, filled in last

  for (int s = 0; s < kIntSlots; ++s) {
    const IntSlotSpec& spec = kIntSpecs[s];
    *p++ = '\t';
    if (spec.empty > 0 && rng->Uniform() < spec.empty) continue;
    int64_t v;
    if (spec.negative > 0 && rng->Uniform() < spec.negative) {
      v = -1;
    } else {
      const double x = std::exp(spec.mu + spec.sd * rng->Normal()) - 0.5;
      v = x < 0 ? 0 : (x > 1e15 ? int64_t{1000000000000000} : int64_t(x));
    }
    const int64_t b = std::min<int64_t>(Bucket(v), Model::kMaxBucket);
    logit += model.bucket_weight[s][b + 1];
    p = std::to_chars(p, p + 24, v).ptr;
  }
  for (int s = 0; s < kCatSlots; ++s) {
    const CatSlot& c = model.cat[s];
    *p++ = '\t';
    present[s] = !(c.empty > 0 && rng->Uniform() < c.empty);
    if (!present[s]) continue;
    uint32_t v = c.Sample(rng->Uniform());
    if (offset != nullptr)
      v = uint32_t((uint64_t{v} + offset[s]) % c.weight.size());
    value[s] = v;
    logit += c.weight[v];
    std::memcpy(p, &c.tokens[size_t{v} * 8], 8);
    p += 8;
  }
  for (const auto& pair : kPairs) {
    const int a = pair[0], b = pair[1];
    if (!present[a] || !present[b]) continue;
    const float* va = &model.cat[a].latent[size_t{value[a]} * kLatentDim];
    const float* vb = &model.cat[b].latent[size_t{value[b]} * kLatentDim];
    for (int k = 0; k < kLatentDim; ++k) logit += va[k] * vb[k];
  }
  *p++ = '\n';
  const double prob = 1.0 / (1.0 + std::exp(-logit));
  *positive = rng->Uniform() < prob;
  row[0] = *positive ? '1' : '0';
  *end = p;
  return prob;
}

class Output {
 public:
  Output(std::string path) : path_(std::move(path)) {}
  ~Output() {
    if (file_ != nullptr) std::fclose(file_);
  }
  absl::Status Open() {
    file_ = std::fopen(path_.c_str(), "wb");
    if (file_ == nullptr) {
      return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", path_));
    }
    buf_.reserve(kFlushAt + 4096);
    return absl::OkStatus();
  }
  std::string* buf() { return &buf_; }
  absl::Status MaybeFlush() {
    return buf_.size() >= kFlushAt ? Flush() : absl::OkStatus();
  }
  absl::Status Close() {
    absl::Status status = Flush();
    if (std::fclose(file_) != 0 && status.ok()) {
      status = absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", path_));
    }
    file_ = nullptr;
    return status;
  }

 private:
  static constexpr size_t kFlushAt = size_t{1} << 22;
  absl::Status Flush() {
    if (!buf_.empty() &&
        std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
      return absl::ErrnoToStatus(errno, absl::StrCat("cannot write ", path_));
    }
    buf_.clear();
    return absl::OkStatus();
  }
  std::string path_;
  FILE* file_ = nullptr;
  std::string buf_;
};

}  // namespace

absl::StatusOr<SyntheticResult> GenerateCriteoData(
    const SyntheticOptions& options, const std::string& train_path,
    const std::string& test_path, const std::string& planted_path) {
  if (!(options.test_fraction >= 0.0 && options.test_fraction <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "test_fraction must be in [0, 1], got ", options.test_fraction));
  }
  Model model;
  MakeModel(options.seed, options.vocab_scale, &model);

  SyntheticResult result;
  result.train_rows = std::min<uint64_t>(
      options.rows,
      static_cast<uint64_t>(std::llround(static_cast<double>(options.rows) *
                                         (1.0 - options.test_fraction))));
  result.test_rows = options.rows - result.train_rows;

  Output train(train_path), test(test_path), planted(planted_path);
  if (absl::Status s = train.Open(); !s.ok()) return s;
  if (absl::Status s = test.Open(); !s.ok()) return s;
  if (!planted_path.empty()) {
    if (absl::Status s = planted.Open(); !s.ok()) return s;
  }

  std::vector<float> test_probs, test_labels;
  test_probs.reserve(result.test_rows);
  test_labels.reserve(result.test_rows);
  uint64_t train_positives = 0;

  Rng rng(Mix64(options.seed) ^ 0x2545f4914f6cdd1dULL);
  char row[1024];
  for (uint64_t r = 0; r < options.rows; ++r) {
    const bool is_test = r >= result.train_rows;
    bool positive = false;
    char* p = row;
    const double prob = MakeRow(model, nullptr, &rng, &p, &positive);
    Output& out = is_test ? test : train;
    out.buf()->append(row, p - row);
    if (absl::Status s = out.MaybeFlush(); !s.ok()) return s;
    if (is_test) {
      test_probs.push_back(static_cast<float>(prob));
      test_labels.push_back(positive ? 1.0f : 0.0f);
      if (!planted_path.empty()) {
        char num[32];
        const int len = std::snprintf(num, sizeof(num), "%.8g\n", prob);
        planted.buf()->append(num, len);
        if (absl::Status s = planted.MaybeFlush(); !s.ok()) return s;
      }
    } else if (positive) {
      ++train_positives;
    }
  }
  if (absl::Status s = train.Close(); !s.ok()) return s;
  if (absl::Status s = test.Close(); !s.ok()) return s;
  if (!planted_path.empty()) {
    if (absl::Status s = planted.Close(); !s.ok()) return s;
  }

  result.train_ctr =
      result.train_rows == 0
          ? 0.0
          : static_cast<double>(train_positives) / result.train_rows;
  result.planted_test_auc = ExactAuc(test_probs, test_labels);
  result.planted_test_logloss =
      test_probs.empty() ? 0.0 : LogLoss(test_probs, test_labels);
  return result;
}

absl::StatusOr<StreamResult> GenerateCriteoStream(const StreamOptions& options,
                                                  const std::string& root) {
  if (options.days < 1 || options.passes_per_day < 1 ||
      options.passes_per_day > 24 || options.parts_per_pass < 1) {
    return absl::InvalidArgumentError(
        "a stream needs days >= 1, passes_per_day in [1, 24] and "
        "parts_per_pass >= 1");
  }
  if (!(options.drift >= 0 && options.drift < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("drift must be in [0, 1), got ", options.drift));
  }
  absl::CivilDay day;
  if (!absl::ParseCivilTime(options.start_day, &day)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start_day must be YYYY-MM-DD, got \"", options.start_day, "\""));
  }
  Model model;
  MakeModel(options.seed, options.vocab_scale, &model);
  Rng rng(Mix64(options.seed) ^ 0x57a3e4d0c0ffee11ULL);
  StreamResult result;
  std::vector<float> probs, labels;
  uint32_t offset[kCatSlots];
  char row[1024];
  for (int d = 0; d < options.days; ++d, ++day) {
    for (int s = 0; s < kCatSlots; ++s) {
      offset[s] = uint32_t(std::llround(d * options.drift *
                                        model.cat[s].weight.size())) %
                  model.cat[s].weight.size();
    }
    const std::string date = absl::FormatCivilTime(day);  // YYYY-MM-DD
    const std::string ymd =
        absl::StrCat(date.substr(0, 4), date.substr(5, 2), date.substr(8, 2));
    for (int h = 0; h < options.passes_per_day; ++h) {
      const int hour = h * 24 / options.passes_per_day;
      const std::string dir = absl::StrFormat("%s/%s/%02d", root, ymd, hour);
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat("cannot create ", dir, ": ", ec.message()));
      }
      for (int part = 0; part < options.parts_per_pass; ++part) {
        Output out(absl::StrFormat("%s/part-%05d", dir, part));
        if (absl::Status st = out.Open(); !st.ok()) return st;
        const uint64_t rows =
            options.rows_per_pass / options.parts_per_pass +
            (uint64_t(part) < options.rows_per_pass % options.parts_per_pass);
        for (uint64_t r = 0; r < rows; ++r) {
          bool positive = false;
          char* p = row;
          probs.push_back(float(MakeRow(model, offset, &rng, &p, &positive)));
          labels.push_back(positive ? 1.0f : 0.0f);
          out.buf()->append(row, p - row);
          if (absl::Status st = out.MaybeFlush(); !st.ok()) return st;
        }
        if (absl::Status st = out.Close(); !st.ok()) return st;
      }
      // Written last: a pass is ready once its marker exists.
      Output marker(absl::StrCat(dir, "/", options.marker));
      if (absl::Status st = marker.Open(); !st.ok()) return st;
      if (absl::Status st = marker.Close(); !st.ok()) return st;
      result.passes.push_back(
          absl::StrCat(ymd, "/", absl::StrFormat("%02d", hour)));
      result.rows += options.rows_per_pass;
    }
  }
  result.planted_auc = ExactAuc(probs, labels);
  return result;
}

}  // namespace sampan
