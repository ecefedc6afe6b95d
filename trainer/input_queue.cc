#include "trainer/input_queue.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/hash.h"
#include "common/log.h"
#include "trainer/data/holdout.h"
#include "trainer/data_options.h"

namespace sampan {

InputQueue::InputQueue(const JobConfig& config, int rank,
                       const coord::DataPosition* start)
    : config_(config),
      rank_(rank),
      by_file_(config.data().split() == DataConfig::BY_FILE),
      window_rows_(config.data().shuffle_buffer_rows()) {
  parts_ = TrainPartsOf(config, rank);
  if (start != nullptr) {
    file_index_ = start->finished() ? TotalFiles() : start->file_index();
    resume_offset_ = start->byte_offset();
    // The window's rows are read (and counted) again.
    resume_skip_ = window_rows_ > 0 ? start->window_skip() : 0;
    rows_before_ = start->rows() - std::min(start->rows(), resume_skip_);
    bad_before_ = std::min(start->bad_rows(), rows_before_);
  }
  epoch_end_ = TotalFiles();
  if (config.data().validation_fraction() > 0 && !parts_.empty()) {
    epoch_end_ = std::min<uint32_t>(
        epoch_end_, (file_index_ / parts_.size() + 1) * parts_.size());
  }
  PublishProgress();
}

uint32_t InputQueue::Epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (parts_.empty()) return 0;
  // At an epoch's end the index is the next epoch's first file.
  const uint32_t at = std::min(file_index_, epoch_end_ - (epoch_end_ > 0));
  return at / parts_.size();
}

bool InputQueue::AtEpochStart() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !parts_.empty() && reader_ == nullptr && resume_offset_ == 0 &&
         resume_skip_ == 0 && file_index_ % parts_.size() == 0 &&
         file_index_ < TotalFiles();
}

bool InputQueue::Done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return file_index_ >= TotalFiles();
}

void InputQueue::NextEpoch() {
  std::lock_guard<std::mutex> lock(mu_);
  if (parts_.empty() || file_index_ >= TotalFiles()) return;
  if (reader_ != nullptr) CloseFile();
  file_index_ = std::max(file_index_, epoch_end_);
  resume_offset_ = 0;
  resume_skip_ = 0;
  epoch_end_ = std::min<uint32_t>(TotalFiles(), file_index_ + parts_.size());
  PublishProgress();
}

void InputQueue::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (reader_ != nullptr) CloseFile();
  file_index_ = epoch_end_ = TotalFiles();
  resume_offset_ = 0;
  resume_skip_ = 0;
  if (status_.ok()) status_ = CheckBadFraction(true);
  PublishProgress();
}

uint32_t InputQueue::TotalFiles() const {
  return parts_.size() * config_.data().epochs();
}

bool InputQueue::Next(Batch* batch, absl::Status* error) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool got = window_rows_ > 0 ? NextShuffled(batch) : NextInOrder(batch);
  PublishProgress();
  if (!got) *error = status_;
  return got;
}

bool InputQueue::NextInOrder(Batch* batch) {
  while (true) {
    if (!status_.ok()) break;
    if (reader_ == nullptr && !OpenNext()) break;
    if (reader_->NextBatch(config_.data().batch_size(), batch)) {
      status_ = CheckBadFraction(false);
      if (status_.ok()) return true;
      break;
    }
    CloseFile();
  }
  return false;
}

void InputQueue::CloseFile() {
  if (!reader_->read_status().ok()) status_ = reader_->read_status();
  good_ += reader_->good_rows();
  bad_ += reader_->bad_rows();
  reader_.reset();
  window_order_.clear();
  window_next_ = 0;
  ++file_index_;
  // The end of the input judges however few rows there were: a file of
  // nothing but malformed lines must fail the job, not train nothing.
  if (status_.ok() && file_index_ >= TotalFiles()) {
    status_ = CheckBadFraction(true);
  }
}

uint64_t InputQueue::RowsRead() const {
  const uint64_t in_reader =
      reader_ ? reader_->good_rows() + reader_->bad_rows() : 0;
  return rows_before_ + good_ + bad_ + in_reader;
}

uint64_t InputQueue::BadRowsRead() const {
  return bad_before_ + bad_ + (reader_ ? reader_->bad_rows() : 0);
}

coord::DataPosition InputQueue::Position() const {
  std::lock_guard<std::mutex> lock(mu_);
  coord::DataPosition p;
  p.set_rank(rank_);
  p.set_file_index(file_index_);
  if (WindowActive()) {
    p.set_byte_offset(window_start_);
    p.set_window_skip(window_next_);
    p.set_rows(rows_before_window_ + window_next_);
    p.set_bad_rows(bad_before_window_);
  } else {
    p.set_byte_offset(reader_ ? reader_->position() : resume_offset_);
    p.set_window_skip(reader_ ? 0 : resume_skip_);
    p.set_rows(RowsRead() + (reader_ ? 0 : resume_skip_));
    p.set_bad_rows(BadRowsRead());
  }
  p.set_finished(file_index_ >= TotalFiles());
  p.set_window_rows(window_rows_);
  p.set_by_file(by_file_);
  return p;
}

void InputQueue::PublishProgress() {
  const double done = file_index_ + (reader_ ? reader_->fraction_done() : 0.0);
  fraction_done_.store(
      std::min(1.0, done / std::max<uint32_t>(1, TotalFiles())),
      std::memory_order_relaxed);
  bad_rows_.store(BadRowsRead(), std::memory_order_relaxed);
}

double InputQueue::FractionDone() const {
  return fraction_done_.load(std::memory_order_relaxed);
}

uint64_t InputQueue::BadRows() const {
  return bad_rows_.load(std::memory_order_relaxed);
}

std::vector<DataPart> TrainPartsOf(const JobConfig& config, int rank) {
  const bool by_file = config.data().split() == DataConfig::BY_FILE;
  const int trainers = std::max<int>(1, config.cluster().num_trainers());
  const double holdout = config.data().test_files_size() == 0
                             ? config.data().holdout_fraction()
                             : 0;
  std::vector<DataPart> parts;
  for (int f = 0; f < config.data().train_files_size(); ++f) {
    if (by_file && f % trainers != rank) continue;
    DataPart part;
    part.path = config.data().train_files(f);
    part.options = ReaderOptionsFromJob(config);
    part.options.part = by_file ? 0 : rank;
    part.options.num_parts = by_file ? 1 : trainers;
    part.holdout_fraction = holdout;
    part.validation_fraction = config.data().validation_fraction();
    parts.push_back(std::move(part));
  }
  return parts;
}

std::vector<DataPart> ValidationPartsOf(const JobConfig& config, int rank) {
  if (!(config.data().validation_fraction() > 0)) return {};
  std::vector<DataPart> parts = TrainPartsOf(config, rank);
  for (DataPart& part : parts) part.slice = DataPart::Slice::kValidation;
  return parts;
}

std::vector<DataPart> TestPartsOf(const JobConfig& config) {
  std::vector<DataPart> parts;
  const bool holdout = config.data().test_files_size() == 0 &&
                       config.data().holdout_fraction() > 0;
  for (const std::string& path :
       holdout ? config.data().train_files() : config.data().test_files()) {
    DataPart part;
    part.path = path;
    part.options = ReaderOptionsFromJob(config);
    part.holdout_fraction = holdout ? config.data().holdout_fraction() : 0;
    // The training parts' split, found once per file (the tail is the
    // same with or without a slice).
    part.validation_fraction =
        holdout ? config.data().validation_fraction() : 0;
    part.slice = holdout ? DataPart::Slice::kTest : DataPart::Slice::kTrain;
    parts.push_back(std::move(part));
  }
  return parts;
}

namespace {

// FindHoldoutSplit, once per file, format and fraction in this process
// while the file's size and modification time stay (errors are not
// remembered).
absl::StatusOr<HoldoutSplit> CachedHoldoutSplit(const DataPart& part) {
  static std::mutex mu;
  static auto* splits = new absl::flat_hash_map<std::string, HoldoutSplit>();
  struct stat st;
  if (stat(part.path.c_str(), &st) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", part.path));
  }
  const std::string key = absl::StrFormat(
      "%s\n%d\n%d.%d\n%d\n%a\n%a", part.path, st.st_size, st.st_mtim.tv_sec,
      st.st_mtim.tv_nsec, static_cast<int>(part.options.parse.format),
      part.holdout_fraction, part.validation_fraction);
  std::lock_guard<std::mutex> lock(mu);
  auto it = splits->find(key);
  if (it != splits->end()) return it->second;
  const absl::Time start = absl::Now();
  absl::StatusOr<HoldoutSplit> split =
      FindHoldoutSplit(part.path, part.options.parse.format,
                       part.holdout_fraction, part.validation_fraction);
  if (!split.ok()) return split;  // not remembered: it may be passing
  SAMPAN_LOG(INFO) << part.path << ": " << split->head_lines
                   << " lines to train"
                   << (part.validation_fraction > 0
                           ? absl::StrCat(", then ", split->validation_lines,
                                          " to validate (offset ",
                                          split->validation_start, ")")
                           : "")
                   << ", the last " << split->tail_lines
                   << " (data.holdout_fraction " << part.holdout_fraction
                   << ") to test, from offset " << split->tail_start
                   << "; counted in "
                   << absl::FormatDuration(absl::Now() - start);
  splits->emplace(key, *split);
  return split;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CriteoReader>> OpenPart(const DataPart& part,
                                                       uint64_t start_offset) {
  CriteoReaderOptions options = part.options;
  options.start_offset = start_offset;
  if (part.holdout_fraction > 0 || part.validation_fraction > 0) {
    absl::StatusOr<HoldoutSplit> split = CachedHoldoutSplit(part);
    if (!split.ok()) return split.status();
    switch (part.slice) {
      case DataPart::Slice::kTrain:
        options.range_end = split->validation_start;
        break;
      case DataPart::Slice::kValidation:
        options.range_begin = split->validation_start;
        options.range_end = split->tail_start;
        break;
      case DataPart::Slice::kTest:
        options.range_begin = split->tail_start;
        break;
    }
  }
  return CriteoReader::Open(part.path, options);
}

absl::Status ReadParts(const std::vector<DataPart>& parts, size_t rows,
                       Batch* batch,
                       const std::function<absl::Status()>& each) {
  for (const DataPart& part : parts) {
    auto reader = OpenPart(part);
    if (!reader.ok()) return reader.status();
    while ((*reader)->NextBatch(rows, batch)) {
      if (absl::Status s = each(); !s.ok()) return s;
    }
    if (!(*reader)->read_status().ok()) return (*reader)->read_status();
  }
  return absl::OkStatus();
}

absl::Status InputQueue::CheckFiles(const JobConfig& config) {
  const std::string& root = config.data().stream().root();
  if (!root.empty()) {
    // A stream's files come later; its root must be there now.
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec)) {
      return absl::NotFoundError(
          absl::StrCat("data.stream.root: ", root, " is not a directory"));
    }
    return absl::OkStatus();
  }
  // Byte ranges: every rank opens every file as rank 0 does.
  const bool by_file = config.data().split() == DataConfig::BY_FILE;
  const int ranks = by_file ? config.cluster().num_trainers() : 1;
  for (int rank = 0; rank < ranks; ++rank) {
    // The whole file: where a held-out tail begins is each trainer's to
    // find, not the launcher's.
    for (const DataPart& part : TrainPartsOf(config, rank)) {
      auto reader = CriteoReader::Open(part.path, part.options);
      if (!reader.ok()) {
        return absl::Status(
            reader.status().code(),
            absl::StrCat("data.train_files: ", reader.status().message()));
      }
    }
  }
  // Read after training (WORD2VEC): missing, it would fail the finished job.
  const std::string& pairs = config.model().word2vec().similarity_file();
  if (config.model().type() == WORD2VEC && !pairs.empty() &&
      !std::ifstream(pairs)) {
    return absl::NotFoundError(
        absl::StrCat("model.word2vec.similarity_file: cannot open ", pairs));
  }
  return absl::OkStatus();
}

bool InputQueue::OpenNext() {
  if (file_index_ >= epoch_end_) return false;
  auto reader = OpenPart(parts_[file_index_ % parts_.size()], resume_offset_);
  resume_offset_ = 0;
  if (!reader.ok()) {
    status_ = reader.status();
    return false;
  }
  reader_ = std::move(*reader);
  return true;
}

constexpr size_t kRowsAhead = 4;

// Hands out the windows' rows until the batch is full or the input ends;
// a batch may span windows and files.
bool InputQueue::NextShuffled(Batch* batch) {
  batch->Clear();
  // After an error nothing more is handed out (the position stays where
  // the last batch left it).
  if (!status_.ok()) return false;
  const size_t want = config_.data().batch_size();
  while (batch->size() < want) {
    if (WindowActive()) {
      // The window is larger than the caches and its order random: fetch
      // the rows a few ahead while this one is copied.
      if (window_next_ + kRowsAhead < window_order_.size()) {
        const uint32_t ahead = window_order_[window_next_ + kRowsAhead];
        const uint32_t at = window_.offsets[ahead];
        __builtin_prefetch(window_.signs.data() + at);
        __builtin_prefetch(window_.signs.data() + at + 8);
        __builtin_prefetch(window_.signs.data() + at + 16);
        __builtin_prefetch(window_.signs.data() + at + 24);
        __builtin_prefetch(window_.slots.data() + at);
      }
      batch->Append(window_, window_order_[window_next_++]);
      continue;
    }
    if (!FillWindow()) break;
  }
  return status_.ok() && batch->size() > 0;
}

bool InputQueue::FillWindow() {
  while (status_.ok()) {
    if (reader_ == nullptr && !OpenNext()) return false;
    window_start_ = reader_->position();
    rows_before_window_ = RowsRead();
    bad_before_window_ = BadRowsRead();
    if (reader_->NextBatch(window_rows_, &window_)) {
      status_ = CheckBadFraction(false);
      // Fisher-Yates from a hash of (rank, file, offset) rather than a
      // library shuffle: a resume by another build must draw the same order.
      const uint64_t seed =
          Mix64(Mix64(Mix64(uint64_t(rank_)) ^ file_index_) ^ window_start_);
      window_order_.resize(window_.size());
      for (uint32_t i = 0; i < window_order_.size(); ++i) window_order_[i] = i;
      for (size_t i = window_order_.size(); i-- > 1;) {
        std::swap(window_order_[i], window_order_[Mix64(seed + i) % (i + 1)]);
      }
      window_next_ = std::min<uint64_t>(resume_skip_, window_order_.size());
      resume_skip_ = 0;
      return status_.ok();
    }
    CloseFile();
  }
  return false;
}

absl::Status InputQueue::CheckBadFraction(bool final) {
  const uint64_t bad = BadRowsRead(), total = RowsRead();
  // Judge only once enough rows were seen for the fraction to mean much.
  if (!final && total < 1000) return absl::OkStatus();
  if (total == 0) return absl::OkStatus();
  const double fraction = static_cast<double>(bad) / total;
  if (fraction <= config_.data().max_bad_fraction()) return absl::OkStatus();
  return absl::DataLossError(absl::StrFormat(
      "%d of %d rows malformed (%.2f%%), above data.max_bad_fraction %.2f%%",
      bad, total, 100 * fraction, 100 * config_.data().max_bad_fraction()));
}

}  // namespace sampan
