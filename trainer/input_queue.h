// InputQueue: the training input of one rank, epoch after epoch, one batch
// at a time: every train file's part `rank` (CriteoReader byte ranges), or
// with data.split BY_FILE the whole files rank, rank + T, ... (T trainers),
// in any data.format, with dense inputs when data.integer_features has them;
// with data.holdout_fraction, of each file's head only (DataPart).
// With data.shuffle_buffer_rows = N it reads N rows at a time (a window)
// and hands them out in an order drawn from the window's file and offset,
// so a window read again comes out in the same order.
//
// It can start at a checkpointed DataPosition and report its own position
// between batches, which is what a checkpoint records and a resume seeks
// to: with windows, the window's start and how many of its rows were
// handed out (the resume re-reads and skips them). Thread-safe: workers
// take one batch at a time under its mutex.
#ifndef SAMPAN_TRAINER_INPUT_QUEUE_H_
#define SAMPAN_TRAINER_INPUT_QUEUE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/coordinator.pb.h"
#include "proto/job.pb.h"
#include "trainer/data/criteo_reader.h"

namespace sampan {

// One file as one reader reads it: for training, a rank's byte range of
// the file, or with data.split BY_FILE the whole file; parsed as the job
// says (data_options.h).
//
// With data.holdout_fraction h > 0 and no data.test_files, every training
// file is cut where train-local's held-out tail begins (trainer/data/
// holdout.h): training reads (the parts of) the head, the test evaluation
// the tail, the same rows as train-local's split of the file.
//
// With data.validation_fraction v > 0 (a batch job), the last v of each
// head is the validation slice (holdout.h): training reads the rest, and
// early stopping scores the slice after every epoch.
struct DataPart {
  enum class Slice { kTrain, kValidation, kTest };
  std::string path;
  CriteoReaderOptions options;
  // The file is split at these fractions (found when the part is opened)
  // when either is > 0, and the part reads `slice` of it.
  double holdout_fraction = 0;
  double validation_fraction = 0;
  Slice slice = Slice::kTrain;
};

// What rank `rank` trains on in one epoch, in order (also what its model
// export reads again).
std::vector<DataPart> TrainPartsOf(const JobConfig& config, int rank);

// Rank `rank`'s share of the validation slice, split as its training parts
// are (none without data.validation_fraction).
std::vector<DataPart> ValidationPartsOf(const JobConfig& config, int rank);

// What the test evaluation reads: data.test_files, or the held-out tails of
// data.train_files (none without either).
std::vector<DataPart> TestPartsOf(const JobConfig& config);

// Opens `part`, at `start_offset` (a position() of an earlier reader of
// it; 0: its start). A held-out split is found first, by counting the
// file's lines once per process (FindHoldoutSplit, remembered for the file
// as long as its size and modification time stay).
absl::StatusOr<std::unique_ptr<CriteoReader>> OpenPart(
    const DataPart& part, uint64_t start_offset = 0);

// Reads every part whole, in order, `rows` rows at a time into `*batch`,
// calling `each` after every batch. Stops at the first error: a part that
// cannot be opened or ends early (a truncated file must not read as a
// smaller one), or `each`'s.
absl::Status ReadParts(const std::vector<DataPart>& parts, size_t rows,
                       Batch* batch, const std::function<absl::Status()>& each);

class InputQueue {
 public:
  // `start` (may be null): resume there instead of at the beginning.
  InputQueue(const JobConfig& config, int rank,
             const coord::DataPosition* start);

  // Whether rank 0 can open every train file the way the job reads it (a
  // file that is missing, or gzip but split by byte range, is named), so a
  // launcher can refuse the job before starting anything.
  static absl::Status CheckFiles(const JobConfig& config);

  // Fills `batch`; false at the end of the last epoch or on error (in
  // `*error`: a file that cannot be read, too many malformed rows). With
  // data.validation_fraction, also false (with no error) at the end of each
  // epoch, until NextEpoch().
  bool Next(Batch* batch, absl::Status* error);

  // Early stopping (data.validation_fraction): the epoch being read (or, at
  // an epoch's end, the one just read); whether the queue stands at the
  // very start of an epoch with nothing of it read; whether every epoch was
  // read. NextEpoch goes on at the next epoch's start, skipping what is
  // left of this one (a lockstep rank stops when the first rank runs out);
  // Finish ends the input there (training stopped early). Call them while
  // no worker is in Next.
  uint32_t Epoch() const;
  bool AtEpochStart() const;
  bool Done() const;
  void NextEpoch();
  void Finish();

  // Where the next batch would start; exact only between batches.
  coord::DataPosition Position() const;

  // Progress as of the last Next; never waits for a batch being read.
  double FractionDone() const;
  uint64_t BadRows() const;

 private:
  bool OpenNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next window (opening files as needed); false at the end or on
  // error.
  bool FillWindow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NextShuffled(Batch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NextInOrder(Batch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishProgress() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WindowActive() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return reader_ != nullptr && window_next_ < window_order_.size();
  }
  // Rows read by this queue and before the checkpoint it resumed from; of
  // them, malformed.
  uint64_t RowsRead() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t BadRowsRead() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // data.max_bad_fraction over every row read; before the end of the input
  // (`final`) only once 1000 rows were.
  absl::Status CheckBadFraction(bool final) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Folds the reader's counts in and moves to the next file.
  void CloseFile() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t TotalFiles() const;

  const JobConfig& config_;
  const int rank_;
  const bool by_file_;
  std::vector<DataPart> parts_;  // what this rank reads, per epoch
  // std::mutex rather than absl::Mutex: Debian's Abseil is not built for
  // ThreadSanitizer, which then cannot see absl::Mutex synchronize.
  mutable std::mutex mu_;
  std::unique_ptr<CriteoReader> reader_ ABSL_GUARDED_BY(mu_);
  // The parts_ entry being read, counted over epochs (epoch * size + i).
  uint32_t file_index_ ABSL_GUARDED_BY(mu_) = 0;
  // The checkpoint's offset into file_index_, used by the first open only.
  uint64_t resume_offset_ ABSL_GUARDED_BY(mu_) = 0;
  // Rows read before the checkpoint this queue resumed from, and how many
  // of them were malformed.
  uint64_t rows_before_ = 0;
  uint64_t bad_before_ = 0;
  uint64_t good_ ABSL_GUARDED_BY(mu_) = 0, bad_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  // Written under mu_ after each Next, read without it: the heartbeat
  // thread must not wait while a worker reads a whole window.
  std::atomic<double> fraction_done_{0};
  std::atomic<uint64_t> bad_rows_{0};
  // Shuffle windows (data.shuffle_buffer_rows > 0): the rows read, the
  // order they go out in, how many went, where the window starts in the
  // file and the rows read before it; the checkpoint's count of rows
  // already handed out of its window, for the first window only.
  const uint32_t window_rows_;
  // Next() reads no file at or past this index (counted over epochs): the
  // end of the current epoch when it stops at epoch ends, else the end.
  uint32_t epoch_end_ ABSL_GUARDED_BY(mu_) = 0;
  Batch window_ ABSL_GUARDED_BY(mu_);
  std::vector<uint32_t> window_order_ ABSL_GUARDED_BY(mu_);
  size_t window_next_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t window_start_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t rows_before_window_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bad_before_window_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t resume_skip_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sampan

#endif  // SAMPAN_TRAINER_INPUT_QUEUE_H_
