// `sampan similarity VECTORS PAIRS`: Spearman's correlation of word-vector
// cosines with human similarity scores (trainer/eval/similarity.h). Scores
// any word2vec-text vectors: a WORD2VEC job's vectors.vec, or fastText's.
#include <iostream>

#include "absl/strings/str_format.h"
#include "cli/cli_util.h"
#include "trainer/eval/similarity.h"

namespace sampan {

int SimilarityMain(int argc, char** argv) {
  if (argc != 4) {
    return ConfigError(absl::InvalidArgumentError(
        "usage: sampan similarity VECTORS.vec PAIRS (word1 word2 score per "
        "line)"));
  }
  absl::StatusOr<WordVectors> vectors = ReadWordVectors(argv[2]);
  if (!vectors.ok()) return Fail(vectors.status());
  absl::StatusOr<WordPairs> pairs = ReadWordPairs(argv[3]);
  if (!pairs.ok()) return Fail(pairs.status());
  for (const std::string& e : vectors->errors) std::cerr << e << "\n";
  for (const std::string& e : pairs->errors) std::cerr << e << "\n";
  const SimilarityScore s = ScoreSimilarity(*vectors, *pairs);
  std::cout << absl::StrFormat(
      "spearman %.6f  pairs %d  missing %d  bad_pair_lines %d  "
      "bad_vector_lines %d  words %d  dim %d\n",
      s.spearman, s.pairs_scored, s.pairs_missing, pairs->bad_lines,
      vectors->bad_lines, vectors->vectors.size(), vectors->dim);
  return 0;
}

}  // namespace sampan
