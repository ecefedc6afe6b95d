// Word-similarity evaluation: how well the cosine similarity of word vectors
// ranks word pairs as people rated them (WordSim353 and its kind), as
// Spearman's rank correlation. Used by `sampan similarity`, by WORD2VEC jobs
// with model.word2vec.similarity_file, and by bench/word2vec_bench.sh on
// fastText's vectors too, so both sides are scored by the same code.
//
// Files:
//  - vectors in the word2vec text format: a first line "count dim", then
//    "word v1 ... vdim" per line (what fastText's .vec and Sampan's export
//    hold);
//  - pairs: "word1 word2 score" per line, separated by tabs or spaces;
//    lines starting with '#' and empty lines are skipped.
// A malformed line is counted and the first few are named (file:line:
// reason), never fatal: a similarity file with a bad row still scores the
// good ones. A vectors file whose header is wrong is an error.
#ifndef SAMPAN_TRAINER_EVAL_SIMILARITY_H_
#define SAMPAN_TRAINER_EVAL_SIMILARITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace sampan {

struct WordVectors {
  int dim = 0;
  absl::flat_hash_map<std::string, std::vector<float>> vectors;
  uint64_t bad_lines = 0;
  std::vector<std::string> errors;  // the first few, "file:line: reason"
};

absl::StatusOr<WordVectors> ReadWordVectors(const std::string& path);

struct WordPair {
  std::string a, b;
  double score = 0;
};

struct WordPairs {
  std::vector<WordPair> pairs;
  uint64_t bad_lines = 0;
  std::vector<std::string> errors;  // the first few, "file:line: reason"
};

absl::StatusOr<WordPairs> ReadWordPairs(const std::string& path);

// Spearman's rank correlation of x and y (ties take their mean rank); 0
// when fewer than two values or either side is constant.
double Spearman(const std::vector<double>& x, const std::vector<double>& y);

struct SimilarityScore {
  double spearman = 0;
  uint64_t pairs_scored = 0;
  uint64_t pairs_missing = 0;  // a word without a vector
};

// Cosine similarity of each pair's vectors against its score.
SimilarityScore ScoreSimilarity(const WordVectors& vectors,
                                const WordPairs& pairs);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_EVAL_SIMILARITY_H_
