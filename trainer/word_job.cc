#include "trainer/word_job.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "sparse_table/job_options.h"
#include "trainer/data/dataset.h"
#include "trainer/data/formats.h"
#include "trainer/data_options.h"
#include "trainer/dataset_source.h"
#include "trainer/eval/similarity.h"
#include "trainer/report.h"
#include "trainer/step_loop.h"

namespace sampan {
namespace {

constexpr int kNamedBadLines = 5;

struct CountStats {
  uint64_t lines = 0, bad = 0;
  // Good lines per trainer rank as `sampan run` splits the files (a line
  // belongs to the byte range it starts in, or to its file's rank).
  std::vector<uint64_t> rank_lines;
};

// Counts one training file into `vocab` (streaming it) and, when `keep` is
// set, appends its good lines to it.
absl::Status CountFile(const JobConfig& config, int file_index,
                       Vocabulary* vocab, Dataset* keep, CountStats* stats) {
  const std::string& path = config.data().train_files(file_index);
  const uint64_t ranks = stats->rank_lines.size();
  const bool by_file = config.data().split() == DataConfig::BY_FILE;
  std::error_code ec;
  // Byte ranges of a gzip file are refused unless one rank reads it.
  const uint64_t size =
      std::max<uint64_t>(1, by_file ? 1 : std::filesystem::file_size(path, ec));
  uint64_t n = 0, offset = 0;
  return ForEachFileLine(path, [&](std::string_view line) {
    ++n;
    ++stats->lines;
    const uint64_t start = offset;
    offset += line.size() + 1;
    const absl::Status s = ForEachTextToken(
        line, [vocab](std::string_view word) { vocab->Count(word); });
    if (!s.ok()) {
      if (++stats->bad <= kNamedBadLines) {
        SAMPAN_LOG(WARNING)
            << path << ":" << n << ": " << s.message() << " (line skipped)";
      }
      return;
    }
    vocab->CountLine();
    ++stats->rank_lines[by_file ? uint64_t(file_index) % ranks
                                : std::min(ranks - 1, start * ranks / size)];
    if (keep != nullptr) keep->AddLine(line);
  });
}

absl::Status CountFiles(const JobConfig& config, Vocabulary* vocab,
                        Dataset* keep, std::vector<uint64_t>* rank_lines) {
  CountStats stats;
  stats.rank_lines.assign(
      std::max<uint32_t>(1, config.cluster().num_trainers()), 0);
  for (int i = 0; i < config.data().train_files_size(); ++i) {
    if (absl::Status s = CountFile(config, i, vocab, keep, &stats); !s.ok()) {
      return s;
    }
  }
  *rank_lines = stats.rank_lines;
  const double max_bad = config.data().max_bad_fraction();
  if (stats.bad > max_bad * stats.lines) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "data.train_files: %d of %d lines are malformed, more than "
        "data.max_bad_fraction %g (the first are logged above)",
        stats.bad, stats.lines, max_bad));
  }
  const Word2VecConfig& w = config.model().word2vec();
  vocab->Finish(w.min_count(), w.subsample());
  SAMPAN_LOG(INFO) << absl::StrFormat(
      "vocabulary: %d words seen >= %d times, of %d tokens on %d lines (%d "
      "malformed lines skipped)",
      vocab->size(), w.min_count(), vocab->tokens(), vocab->lines(), stats.bad);
  if (vocab->size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.train_files: no word is seen model.word2vec.min_count (",
        w.min_count(), ") times"));
  }
  return absl::OkStatus();
}

// Counts tokens and loss; logs progress every tenth of the planned lines.
class WordProgress : public StepObserver {
 public:
  explicit WordProgress(uint64_t planned_lines) : planned_(planned_lines) {}
  absl::Status Trained(const Worker& w, double loss) override {
    std::lock_guard<std::mutex> lock(mu_);
    lines_ += w.batch.size();
    tokens_ += w.words.tokens;
    updates_ += w.words.updates;
    loss_ += loss;
    const uint64_t tenth = std::max<uint64_t>(1, planned_ / 10);
    if (lines_ / tenth > marks_) {
      marks_ = lines_ / tenth;
      SAMPAN_LOG(INFO) << absl::StrFormat(
          "%d%% of lines: %d tokens, loss %.4f per target, step size %.5f",
          std::min<uint64_t>(100, 100 * lines_ / planned_), tokens_,
          updates_ > 0 ? loss_ / updates_ : 0.0, w.words.rate);
    }
    return absl::OkStatus();
  }
  uint64_t tokens() const {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_;
  }

 private:
  const uint64_t planned_;
  mutable std::mutex mu_;  // guards everything below
  uint64_t lines_ = 0, tokens_ = 0, updates_ = 0, marks_ = 0;
  double loss_ = 0;
};

}  // namespace

bool IsWordJob(const JobConfig& config) {
  return config.model().type() == WORD2VEC;
}

absl::StatusOr<std::unique_ptr<Vocabulary>> CountJobWords(
    const JobConfig& config, std::vector<uint64_t>* rank_lines) {
  auto vocab = std::make_unique<Vocabulary>();
  if (absl::Status s = CountFiles(config, vocab.get(), nullptr, rank_lines);
      !s.ok()) {
    return s;
  }
  return vocab;
}

WordModelOptions WordOptionsFromJob(const JobConfig& config, int rank,
                                    uint64_t rank_lines, uint64_t start_lines) {
  const Word2VecConfig& w = config.model().word2vec();
  WordModelOptions o;
  o.dim = int(config.model().embedding_dim());
  o.window = int(w.window());
  o.negatives = int(w.negatives());
  o.cbow = w.cbow();
  o.learning_rate = config.table().optimizer().learning_rate();
  o.planned_lines = rank_lines * config.data().epochs();
  o.start_lines = start_lines;
  // Each rank's threads draw their own streams.
  o.seed = w.seed() * 1000003 + uint64_t(rank);
  return o;
}

absl::StatusOr<RankWords> RankWordsOf(const JobConfig& config, int rank,
                                      uint64_t trained_lines) {
  std::vector<uint64_t> rank_lines;
  absl::StatusOr<std::unique_ptr<Vocabulary>> vocab =
      CountJobWords(config, &rank_lines);
  if (!vocab.ok()) return vocab.status();
  RankWords words;
  words.vocab = *std::move(vocab);
  words.model = std::make_unique<WordModel>(
      words.vocab.get(),
      WordOptionsFromJob(config, rank, rank_lines[rank], trained_lines));
  SAMPAN_LOG(INFO) << "trainer " << rank << ": " << rank_lines[rank]
                   << " lines a pass in its part; " << trained_lines
                   << " trained before";
  return words;
}

void LogWordRate(int rank, uint64_t tokens, absl::Duration elapsed) {
  const double seconds = absl::ToDoubleSeconds(elapsed);
  SAMPAN_LOG(INFO) << absl::StrFormat(
      "trainer %d: trained %d tokens in %.3f s: %.0f words/s", rank, tokens,
      seconds, tokens / std::max(seconds, 1e-9));
}

std::string WordVectorsPath(const JobConfig& config) {
  return absl::StrCat(config.output_dir(), "/vectors.vec");
}

absl::Status ExportWordVectors(const std::string& path, const Vocabulary& vocab,
                               int dim, const PullRowsFn& pull) {
  const std::string tmp = path + ".tmp";
  std::FILE* out = std::fopen(tmp.c_str(), "w");
  if (out == nullptr) {
    return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  std::fprintf(out, "%zu %d\n", vocab.size(), dim);
  constexpr size_t kChunk = 4096;
  std::vector<uint64_t> keys;
  std::vector<float> rows;
  absl::Status status;
  for (size_t begin = 0; begin < vocab.size() && status.ok(); begin += kChunk) {
    const size_t n = std::min(kChunk, vocab.size() - begin);
    keys.resize(n);
    for (size_t i = 0; i < n; ++i)
      keys[i] = vocab.input_key(int32_t(begin + i));
    rows.resize(n * (dim + 1));
    status = pull(keys, rows.data());
    for (size_t i = 0; i < n && status.ok(); ++i) {
      std::fputs(vocab.word(int32_t(begin + i)).c_str(), out);
      for (int j = 1; j <= dim; ++j) {
        std::fprintf(out, " %.6g", rows[i * (dim + 1) + j]);
      }
      std::fputc('\n', out);
    }
  }
  const bool written = std::fclose(out) == 0;
  if (status.ok() && !written) {
    status = absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (status.ok()) {
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
      status = absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ",
                                                path, ": ", ec.message()));
    }
  }
  if (!status.ok()) std::remove(tmp.c_str());
  return status;
}

absl::Status WriteWordResult(const JobConfig& config, const Vocabulary& vocab,
                             double words_per_second) {
  const std::string vectors = WordVectorsPath(config);
  std::string result =
      absl::StrFormat("vocabulary=%d\ntokens=%d\nlines=%d\nvectors=%s\n",
                      vocab.size(), vocab.tokens(), vocab.lines(), vectors);
  if (words_per_second >= 0) {
    absl::StrAppendFormat(&result, "words_per_second=%.0f\n", words_per_second);
  }
  std::string line =
      absl::StrFormat("word vectors: %d words x %d in %s", vocab.size(),
                      config.model().embedding_dim(), vectors);
  const std::string& file = config.model().word2vec().similarity_file();
  if (!file.empty()) {
    absl::StatusOr<WordVectors> v = ReadWordVectors(vectors);
    if (!v.ok()) return v.status();
    absl::StatusOr<WordPairs> pairs = ReadWordPairs(file);
    if (!pairs.ok()) {
      return absl::NotFoundError(absl::StrCat(
          "model.word2vec.similarity_file: ", pairs.status().message()));
    }
    for (const std::string& e : pairs->errors) {
      SAMPAN_LOG(WARNING) << e << " (pair skipped)";
    }
    const SimilarityScore s = ScoreSimilarity(*v, *pairs);
    absl::StrAppendFormat(&result,
                          "spearman=%.6f\nsimilarity_pairs=%d\n"
                          "similarity_missing=%d\nsimilarity_bad_lines=%d\n",
                          s.spearman, s.pairs_scored, s.pairs_missing,
                          pairs->bad_lines);
    absl::StrAppendFormat(&line,
                          "; Spearman %.4f on %d pairs of %s (%d with a word "
                          "outside the vocabulary, %d malformed lines)",
                          s.spearman, s.pairs_scored, file, s.pairs_missing,
                          pairs->bad_lines);
  }
  SAMPAN_LOG(INFO) << line;
  std::ofstream out(ResultPath(config));
  out << result;
  out.close();
  if (!out) {
    return absl::InternalError(
        absl::StrCat("cannot write ", ResultPath(config)));
  }
  return absl::OkStatus();
}

absl::Status TrainWordsLocal(const JobConfig& config) {
  std::error_code ec;
  std::filesystem::create_directories(config.output_dir(), ec);
  Vocabulary vocab;
  Dataset data;
  data.parse = ParseOptionsFromJob(config);
  std::vector<uint64_t> rank_lines;
  if (absl::Status s = CountFiles(config, &vocab, &data, &rank_lines);
      !s.ok()) {
    return s;
  }
  // Batches are 32-bit offsets into one in-memory corpus.
  if (data.signs.size() > UINT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.train_files: ", data.signs.size(),
        " tokens; train-local holds at most 2^32 in memory (use `sampan "
        "run`, which streams them)"));
  }
  const WordModelOptions options =
      WordOptionsFromJob(config, 0, data.size(), 0);
  const WordModel model(&vocab, options);
  TableOptions table = TableOptionsFromJob(config, 0);
  table.embedding_dim = uint32_t(options.dim);
  std::unique_ptr<SparseTable> rows_table = NewMemoryTable(table);
  std::unique_ptr<SparseStore> rows = TableRows(rows_table.get());
  std::unique_ptr<DenseWeights> dense = NoDenseWeights();
  DatasetSource source(data, config.data().batch_size(),
                       int(config.data().epochs()), config.data().shuffle(),
                       config.model().word2vec().seed());
  WordProgress progress(options.planned_lines);
  StepLoopOptions loop;
  loop.words = &model;
  loop.source = &source;
  loop.rows = rows.get();
  loop.dense = dense.get();
  loop.observer = &progress;
  loop.threads =
      int(std::max<uint32_t>(1, config.cluster().threads_per_trainer()));
  const absl::Time start = absl::Now();
  if (absl::Status s = RunStepLoop(loop); !s.ok()) return s;
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const double words_per_second = progress.tokens() / std::max(seconds, 1e-9);
  SAMPAN_LOG(INFO) << absl::StrFormat(
      "trained %d tokens in %.2f s: %.0f words/s, %.0f words/s per thread",
      progress.tokens(), seconds, words_per_second,
      words_per_second / loop.threads);
  absl::Status s =
      ExportWordVectors(WordVectorsPath(config), vocab, options.dim,
                        [&](absl::Span<const uint64_t> keys, float* out) {
                          return rows_table->Pull(keys, false, out);
                        });
  if (!s.ok()) return s;
  return WriteWordResult(config, vocab, words_per_second);
}

}  // namespace sampan
