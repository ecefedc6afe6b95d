#include "trainer/eval/similarity.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace sampan {
namespace {

constexpr size_t kNamedErrors = 5;

std::vector<absl::string_view> Fields(const std::string& line) {
  return absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
}

void Note(const std::string& path, uint64_t line, absl::string_view why,
          uint64_t* bad, std::vector<std::string>* errors) {
  ++*bad;
  if (errors->size() < kNamedErrors) {
    errors->push_back(absl::StrCat(path, ":", line, ": ", why));
  }
}

std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double mean = (i + j) / 2.0 + 1;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = mean;
    i = j + 1;
  }
  return rank;
}

}  // namespace

absl::StatusOr<WordVectors> ReadWordVectors(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  WordVectors out;
  std::string line;
  uint64_t count = 0;
  if (!std::getline(in, line)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":1: empty file; expected \"count dim\""));
  }
  const std::vector<absl::string_view> head = Fields(line);
  if (head.size() != 2 || !absl::SimpleAtoi(head[0], &count) ||
      !absl::SimpleAtoi(head[1], &out.dim) || out.dim < 1 ||
      out.dim > (1 << 16)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ":1: expected \"count dim\" (the word2vec text format; dim "
        "at most 65536)"));
  }
  for (uint64_t n = 2; std::getline(in, line); ++n) {
    const std::vector<absl::string_view> f = Fields(line);
    if (f.empty()) continue;
    if (int(f.size()) != out.dim + 1) {
      Note(path, n,
           absl::StrCat("expected a word and ", out.dim, " numbers, got ",
                        f.size(), " fields"),
           &out.bad_lines, &out.errors);
      continue;
    }
    std::vector<float> v(out.dim);
    bool ok = true;
    for (int j = 0; j < out.dim && ok; ++j) {
      ok = absl::SimpleAtof(f[j + 1], &v[j]) && std::isfinite(v[j]);
    }
    if (!ok) {
      Note(path, n, "a value is not a finite number", &out.bad_lines,
           &out.errors);
      continue;
    }
    out.vectors.emplace(std::string(f[0]), std::move(v));
  }
  return out;
}

absl::StatusOr<WordPairs> ReadWordPairs(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  WordPairs out;
  std::string line;
  for (uint64_t n = 1; std::getline(in, line); ++n) {
    const std::vector<absl::string_view> f = Fields(line);
    if (f.empty() || f[0][0] == '#') continue;
    WordPair p;
    if (f.size() != 3 || !absl::SimpleAtod(f[2], &p.score) ||
        !std::isfinite(p.score)) {
      Note(path, n, "expected \"word1 word2 score\"", &out.bad_lines,
           &out.errors);
      continue;
    }
    p.a = std::string(f[0]);
    p.b = std::string(f[1]);
    out.pairs.push_back(std::move(p));
  }
  return out;
}

double Spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return 0;
  const std::vector<double> rx = Ranks(x), ry = Ranks(y);
  const double mean = (x.size() + 1) / 2.0;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  if (sxx == 0 || syy == 0) return 0;
  return sxy / std::sqrt(sxx * syy);
}

SimilarityScore ScoreSimilarity(const WordVectors& vectors,
                                const WordPairs& pairs) {
  SimilarityScore s;
  std::vector<double> cosine, human;
  for (const WordPair& p : pairs.pairs) {
    const auto a = vectors.vectors.find(p.a), b = vectors.vectors.find(p.b);
    if (a == vectors.vectors.end() || b == vectors.vectors.end()) {
      ++s.pairs_missing;
      continue;
    }
    double ab = 0, aa = 0, bb = 0;
    for (int j = 0; j < vectors.dim; ++j) {
      ab += double(a->second[j]) * b->second[j];
      aa += double(a->second[j]) * a->second[j];
      bb += double(b->second[j]) * b->second[j];
    }
    cosine.push_back(aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0);
    human.push_back(p.score);
  }
  s.pairs_scored = cosine.size();
  s.spearman = Spearman(cosine, human);
  return s;
}

}  // namespace sampan
