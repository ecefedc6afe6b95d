// Word-vector jobs (model.type WORD2VEC, trainer/model/word2vec.h): what
// `sampan run`'s trainers and `sampan train-local` share around the step
// loop. The vocabulary pass, the job -> WordModelOptions mapping, the export
// in the word2vec text format and the similarity result.
//
// Every trainer counts every training file (one read of the text at start,
// one in-memory count per distinct word), so all ranks hold the same
// vocabulary without talking to each other and a restarted trainer counts
// the same again. At scale a vocabulary file would be read instead (not
// built yet).
#ifndef SAMPAN_TRAINER_WORD_JOB_H_
#define SAMPAN_TRAINER_WORD_JOB_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proto/job.pb.h"
#include "trainer/model/word2vec.h"

namespace sampan {

bool IsWordJob(const JobConfig& config);

// Counts data.train_files (plain or gzip, streamed; lines the TEXT parser
// refuses are skipped as training skips them) and keeps
// model.word2vec.min_count. `rank_lines` gets the good lines each trainer
// rank reads under data.split (cluster.num_trainers entries).
absl::StatusOr<std::unique_ptr<Vocabulary>> CountJobWords(
    const JobConfig& config, std::vector<uint64_t>* rank_lines);

// The model rank `rank` of `config` trains: the step size decays over
// data.epochs x `rank_lines` lines; `start_lines` are those a resumed
// trainer already trained.
WordModelOptions WordOptionsFromJob(const JobConfig& config, int rank,
                                    uint64_t rank_lines, uint64_t start_lines);

// A trainer rank's word vectors: the vocabulary every rank counts alike
// (CountJobWords) and the model of rank `rank`'s part, whose step size
// decays from `trained_lines` on (a resumed trainer's). Logs the part's
// size. Errors as CountJobWords.
struct RankWords {
  std::unique_ptr<Vocabulary> vocab;
  std::unique_ptr<WordModel> model;  // over *vocab
};
absl::StatusOr<RankWords> RankWordsOf(const JobConfig& config, int rank,
                                      uint64_t trained_lines);

// Logs a trainer's words/s: `tokens` trained in `elapsed`.
void LogWordRate(int rank, uint64_t tokens, absl::Duration elapsed);

// <output_dir>/vectors.vec
std::string WordVectorsPath(const JobConfig& config);

// Reads keys.size() rows ([w, v[dim]] each) without creating any.
using PullRowsFn =
    std::function<absl::Status(absl::Span<const uint64_t> keys, float* rows)>;

// Writes every vocabulary word's input vector, most frequent first, in the
// word2vec text format ("count dim", then "word v1 ... vdim"), through a
// temporary file renamed into place.
absl::Status ExportWordVectors(const std::string& path, const Vocabulary& vocab,
                               int dim, const PullRowsFn& pull);

// After the export: scores model.word2vec.similarity_file when set, logs
// it, and writes result.txt (vocabulary, tokens, lines, and spearman,
// similarity_pairs, similarity_missing; words_per_second when >= 0).
absl::Status WriteWordResult(const JobConfig& config, const Vocabulary& vocab,
                             double words_per_second);

// `sampan train-local` of a WORD2VEC job: every training file in memory,
// cluster.threads_per_trainer threads on an in-process table, the lines in
// file order or, with data.shuffle, in a new order every epoch (a corpus
// sorted by topic, as Brown is by genre, trains better shuffled: the
// decaying step size otherwise ends on the last topic).
absl::Status TrainWordsLocal(const JobConfig& config);

}  // namespace sampan

#endif  // SAMPAN_TRAINER_WORD_JOB_H_
