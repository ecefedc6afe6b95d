#include "trainer/input_queue.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace sampan {

InputQueue::InputQueue(const JobConfig& config, int rank,
                       const coord::DataPosition* start)
    : config_(config), rank_(rank) {
  if (start != nullptr) {
    file_index_ = start->finished() ? TotalFiles() : start->file_index();
    resume_offset_ = start->byte_offset();
    rows_before_ = start->rows();
  }
}

uint32_t InputQueue::TotalFiles() const {
  return config_.data().train_files_size() * config_.data().epochs();
}

bool InputQueue::Next(Batch* batch, absl::Status* error) {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (!status_.ok()) break;
    if (reader_ == nullptr && !OpenNext()) break;
    if (reader_->NextBatch(config_.data().batch_size(), batch)) {
      status_ = CheckBadFraction();
      if (status_.ok()) return true;
      break;
    }
    good_ += reader_->good_rows();
    bad_ += reader_->bad_rows();
    reader_.reset();
    ++file_index_;
  }
  *error = status_;
  return false;
}

coord::DataPosition InputQueue::Position() const {
  absl::MutexLock lock(&mu_);
  coord::DataPosition p;
  p.set_rank(rank_);
  p.set_file_index(file_index_);
  p.set_byte_offset(reader_ ? reader_->position() : resume_offset_);
  const uint64_t in_reader =
      reader_ ? reader_->good_rows() + reader_->bad_rows() : 0;
  p.set_rows(rows_before_ + good_ + bad_ + in_reader);
  p.set_finished(file_index_ >= TotalFiles());
  return p;
}

double InputQueue::FractionDone() const {
  absl::MutexLock lock(&mu_);
  double done = file_index_ + (reader_ ? reader_->fraction_done() : 0.0);
  return std::min(1.0, done / std::max<uint32_t>(1, TotalFiles()));
}

uint64_t InputQueue::BadRows() const {
  absl::MutexLock lock(&mu_);
  return bad_ + (reader_ ? reader_->bad_rows() : 0);
}

bool InputQueue::OpenNext() {
  if (file_index_ >= TotalFiles()) return false;
  const int files = config_.data().train_files_size();
  CriteoReaderOptions options;
  options.part = rank_;
  options.num_parts = config_.cluster().num_trainers();
  options.start_offset = resume_offset_;
  options.empty_field_signs = config_.data().empty_field_signs();
  resume_offset_ = 0;
  auto reader = CriteoReader::Open(
      config_.data().train_files(file_index_ % files), options);
  if (!reader.ok()) {
    status_ = reader.status();
    return false;
  }
  reader_ = std::move(*reader);
  return true;
}

absl::Status InputQueue::CheckBadFraction() {
  const uint64_t bad = bad_ + reader_->bad_rows();
  const uint64_t total = bad + good_ + reader_->good_rows();
  // Judge only once enough rows were seen for the fraction to mean much.
  if (total < 1000) return absl::OkStatus();
  const double fraction = static_cast<double>(bad) / total;
  if (fraction <= config_.data().max_bad_fraction()) return absl::OkStatus();
  return absl::DataLossError(absl::StrFormat(
      "%d of %d rows malformed (%.2f%%), above data.max_bad_fraction %.2f%%",
      bad, total, 100 * fraction, 100 * config_.data().max_bad_fraction()));
}

}  // namespace sampan
