// Word vectors: skip-gram or CBOW with negative sampling (Mikolov et al.
// 2013, as fastText trains them), on rows pulled like the CTR models' rows
// (trainer/step_loop.h), so `sampan run` trains them on the pservers fully
// asynchronously and `sampan train-local` on an in-process table.
//
// Every word of the vocabulary has two rows: its input vector under
// WordInputKey (the sign the TEXT parser gives the token, formats.h) and its
// output vector under WordOutputKey. A row is [w, v[dim]] like every table
// row; w is unused.
//
// A step is a block of lines (a Batch of TEXT examples). Plan() drops words
// outside the vocabulary, subsamples frequent ones, draws each position's
// window (1..window each side) and its negatives (unigram^0.75), and lists
// the rows the step needs, each once. After those rows are pulled, Train()
// runs every pair's SGD update, in order, on the step's private copy of the
// rows (what fastText does on one shared matrix), and turns each row's
// change into the gradient to push: g = (before - after) / learning_rate, so
// that the table's SGD (v -= learning_rate * g) adds exactly that change.
// Steps of other threads or trainers that touch the same rows add their
// changes too: Hogwild at the granularity of a block, whose size
// (data.batch_size lines) bounds how stale a step's rows are.
//
// The step size decays linearly from learning_rate to 1e-4 of it over the
// planned lines (lines, not words, so a resumed job picks up the decay from
// its checkpointed row count).
//
// Thread safety: a Vocabulary is immutable once built. WordModel's const
// methods may run concurrently with distinct Workspaces.
#ifndef SAMPAN_TRAINER_MODEL_WORD2VEC_H_
#define SAMPAN_TRAINER_MODEL_WORD2VEC_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "trainer/data/batch.h"

namespace sampan {

// The table keys of a word's two vectors.
uint64_t WordInputKey(std::string_view word);
uint64_t WordOutputKey(std::string_view word);

class Vocabulary {
 public:
  // Counting: every line, and every token of a good line.
  void CountLine() { ++lines_; }
  void Count(std::string_view word);

  // Keeps the words counted at least `min_count` times, most frequent first
  // (ties by word), and sets their keep probabilities for subsampling
  // threshold `subsample` (0: keep all): min(1, sqrt(t/f) + t/f) with f the
  // word's share of every counted token. Counting ends here.
  void Finish(uint64_t min_count, double subsample);

  size_t size() const { return words_.size(); }
  // The word whose input key is `sign`, or -1.
  int32_t Find(uint64_t sign) const {
    const auto it = ids_.find(sign);
    return it == ids_.end() ? -1 : it->second;
  }
  const std::string& word(int32_t id) const { return words_[id]; }
  uint64_t count(int32_t id) const { return counts_[id]; }
  float keep(int32_t id) const { return keep_[id]; }
  uint64_t input_key(int32_t id) const { return input_keys_[id]; }
  uint64_t output_key(int32_t id) const { return output_keys_[id]; }
  // Every token and line counted, words below min_count included.
  uint64_t tokens() const { return tokens_; }
  uint64_t lines() const { return lines_; }

 private:
  absl::flat_hash_map<std::string, uint64_t> counting_;
  uint64_t tokens_ = 0, lines_ = 0;
  std::vector<std::string> words_;
  std::vector<uint64_t> counts_, input_keys_, output_keys_;
  std::vector<float> keep_;
  absl::flat_hash_map<uint64_t, int32_t> ids_;
};

// Draws word ids with probability proportional to count^0.75 (Walker's
// alias method: O(1) a draw, exact probabilities).
class NegativeSampler {
 public:
  explicit NegativeSampler(const Vocabulary& vocab, double power = 0.75);
  // `u` is 64 uniform random bits.
  int32_t Sample(uint64_t u) const {
    const uint32_t i = uint32_t((u >> 32) * prob_.size() >> 32);
    return (u & 0xffffffffu) < prob_[i] ? int32_t(i) : alias_[i];
  }
  // The probability of drawing `id` (for tests).
  double Probability(int32_t id) const;

 private:
  std::vector<uint32_t> prob_;  // of keeping i, scaled to 2^32
  std::vector<int32_t> alias_;
  std::vector<double> p_;
};

struct WordModelOptions {
  int dim = 100;
  int window = 5;
  int negatives = 5;
  bool cbow = false;
  // The table's SGD learning rate: the starting step size.
  float learning_rate = 0.05f;
  // Lines the decay runs over (epochs x this trainer's lines), and lines
  // already trained (a resume).
  uint64_t planned_lines = 1;
  uint64_t start_lines = 0;
  uint64_t seed = 1;
};

class WordModel {
 public:
  // `vocab` must outlive the model.
  WordModel(const Vocabulary* vocab, const WordModelOptions& options);

  int row_dim() const { return dim_ + 1; }
  const Vocabulary& vocab() const { return *vocab_; }

  // One thread's state and buffers, reused across steps.
  struct Workspace {
    uint64_t rng = 0;  // seeded on first use
    uint32_t stamp = 0;
    std::vector<uint32_t> in_seen, out_seen;  // per word: stamp of its row
    std::vector<uint32_t> in_row, out_row;    // per word: row this step
    std::vector<int32_t> kept;                // one line's kept words
    // The step's updates: [inputs n, n input rows, target row, negative
    // rows...] each.
    std::vector<uint32_t> ops;
    std::vector<float> before, h, grad_h;
    size_t rows = 0;       // rows planned (keys)
    float rate = 0;        // this step's step size
    uint64_t tokens = 0;   // tokens of the planned lines
    uint64_t updates = 0;  // (input, target) updates planned
  };

  // Plans a step on `batch`: fills the rows it needs (`keys`) and how often
  // each is used (`shows`).
  void Plan(const Batch& batch, Workspace* ws, std::vector<uint64_t>* keys,
            std::vector<float>* shows) const;
  // Trains the planned step on `rows` (row_dim() floats per key, pulled in
  // Plan's order), leaving them trained, and writes the gradient to push
  // (same shape). Returns the summed negative log-likelihood of every
  // target and negative.
  double Train(Workspace* ws, float* rows, float* grads) const;

  // Lines planned so far (every thread).
  uint64_t lines_done() const { return lines_.load(); }

 private:
  uint32_t InputRow(int32_t id, Workspace* ws, std::vector<uint64_t>* keys,
                    std::vector<float>* shows) const;
  uint32_t OutputRow(int32_t id, Workspace* ws, std::vector<uint64_t>* keys,
                     std::vector<float>* shows) const;

  const Vocabulary* const vocab_;
  const NegativeSampler negatives_;
  const int dim_, window_, negatives_per_target_;
  const bool cbow_;
  const float rate0_;
  const uint64_t planned_lines_, seed_;
  mutable std::atomic<uint64_t> lines_;
  mutable std::atomic<uint64_t> workspaces_{0};  // seeds each Workspace
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_MODEL_WORD2VEC_H_
