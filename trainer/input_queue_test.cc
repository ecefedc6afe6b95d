#include "trainer/input_queue.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

constexpr int kRows = 1000;

// A file of `format` whose row r carries the token first + r (as 8 hex
// digits) as a sign of slot 14 (Criteo's C1), so a batch's rows can be
// named, and r as its first integer field (Criteo; I1) so that its dense
// inputs can be checked. Avazu files have a header line.
std::string WriteRows(const std::string& name, int first = 0,
                      DataFormat format = CRITEO_TSV) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(dir ? dir : "/tmp", "/", name);
  std::ofstream out(path);
  if (format == AVAZU_CSV) out << "id,click,hour,C1,C2,C3,C4,C5\n";
  for (int r = 0; r < kRows; ++r) {
    const int label = r % 3 == 0 ? 1 : 0;
    const std::string token = absl::StrFormat("%08x", first + r);
    if (format == AVAZU_CSV) {
      // id, click, hour, then slots 2..22: slot 14 is column 15.
      out << r << ',' << label << ",141021" << r % 24;
      for (int slot = 2; slot <= 22; ++slot) {
        out << ',' << (slot == 14 ? token : "ab");
      }
    } else if (format == LIBFFM) {
      out << label << " 13:" << token << ":1 0:" << r % 7 << ":0.5";
    } else {
      out << label << '\t' << r;
      for (int i = 1; i < 13; ++i) out << '\t' << i;
      out << '\t' << token;
      for (int c = 1; c < 26; ++c) out << "\tabcd";
    }
    out << '\n';
  }
  return path;
}

class InputQueueTest : public testing::Test {
 protected:
  void SetUp() override {
    const std::string path = WriteRows("rows.tsv");
    config_.mutable_data()->add_train_files(path);
    config_.mutable_data()->set_batch_size(64);
    config_.mutable_data()->set_epochs(2);
    config_.mutable_cluster()->set_num_trainers(1);
    for (int r = 0; r < 3 * kRows; ++r) {
      row_of_[FeatureSign(14, absl::StrFormat("%08x", r))] = r;
    }
  }

  // The rows of each remaining batch, in order; stops after `batches`
  // batches when it is >= 0.
  std::vector<int> Drain(InputQueue* q, int batches = -1) {
    std::vector<int> rows;
    Batch batch;
    absl::Status error;
    for (int b = 0; b != batches && q->Next(&batch, &error); ++b) {
      EXPECT_EQ(batch.dense.size(), batch.size() * batch.dense_dim);
      for (size_t i = 0; i < batch.size(); ++i) {
        for (size_t j = batch.offsets[i]; j < batch.offsets[i + 1]; ++j) {
          if (batch.slots[j] == 14) rows.push_back(row_of_.at(batch.signs[j]));
        }
        // I1 is the row's number in its file: its dense input came with it.
        if (batch.dense_dim > 0) {
          EXPECT_FLOAT_EQ(batch.dense[i * batch.dense_dim],
                          std::log1p(double(rows.back() % kRows)));
        }
      }
    }
    EXPECT_TRUE(error.ok()) << error;
    return rows;
  }

  // Appends what rank 0 trains after resuming at `at`.
  void AppendResumed(const coord::DataPosition& at, std::vector<int>* rows) {
    InputQueue resumed(config_, 0, &at);
    const std::vector<int> rest = Drain(&resumed);
    rows->insert(rows->end(), rest.begin(), rest.end());
  }

  // A queue resumed at a position taken between batches (inside a window,
  // at a window's end, across the epoch boundary) hands out exactly the
  // rest of the uninterrupted sequence: nothing skipped, nothing twice.
  void ExpectResumesExactly() {
    InputQueue whole(config_, 0, nullptr);
    const std::vector<int> expected = Drain(&whole);
    ASSERT_EQ(expected.size(), config_.data().epochs() * size_t(kRows));
    for (int batches : {1, 3, 9, 15, 16, 17, 30}) {
      SCOPED_TRACE(absl::StrCat(batches, " batches before the checkpoint"));
      InputQueue first(config_, 0, nullptr);
      std::vector<int> rows = Drain(&first, batches);
      const coord::DataPosition at = first.Position();
      EXPECT_EQ(at.rows(), rows.size());
      // Positions taken before anything is read again report the same
      // place.
      EXPECT_EQ(InputQueue(config_, 0, &at).Position().SerializeAsString(),
                at.SerializeAsString());
      AppendResumed(at, &rows);
      EXPECT_EQ(rows, expected);
    }
  }

  JobConfig config_;
  absl::flat_hash_map<uint64_t, int> row_of_;
};

// With a validation slice the queue reads each file's first 80% and stops
// at every epoch's end; NextEpoch skips what a lockstep rank left of its
// epoch, Finish ends the input; a position at an epoch's start says so.
TEST_F(InputQueueTest, StopsAtEpochEndsWithAValidationSlice) {
  config_.mutable_data()->set_validation_fraction(0.2);
  config_.mutable_data()->set_epochs(3);
  InputQueue q(config_, 0, nullptr);
  EXPECT_EQ(q.Epoch(), 0u);
  EXPECT_TRUE(q.AtEpochStart());
  std::vector<int> rows = Drain(&q);
  ASSERT_EQ(rows.size(), 800u);
  for (int i = 0; i < 800; ++i) ASSERT_EQ(rows[i], i) << i;
  EXPECT_EQ(q.Epoch(), 0u);  // the one just read
  EXPECT_FALSE(q.Done());
  EXPECT_TRUE(Drain(&q).empty());  // stays stopped
  // A checkpoint here resumes at the next epoch's start.
  const coord::DataPosition between = q.Position();
  EXPECT_EQ(between.file_index(), 1u);
  EXPECT_FALSE(between.finished());
  InputQueue resumed(config_, 0, &between);
  EXPECT_TRUE(resumed.AtEpochStart());
  EXPECT_EQ(resumed.Epoch(), 1u);

  q.NextEpoch();
  EXPECT_EQ(q.Epoch(), 1u);
  rows = Drain(&q, 3);  // a lockstep rank stopped after 3 batches
  EXPECT_EQ(rows.size(), 3u * 64);
  EXPECT_FALSE(q.AtEpochStart());
  q.NextEpoch();  // the rest of epoch 2 is skipped
  EXPECT_EQ(q.Epoch(), 2u);
  EXPECT_TRUE(q.AtEpochStart());
  q.Finish();  // stopped early
  EXPECT_TRUE(q.Done());
  EXPECT_TRUE(q.Position().finished());
  EXPECT_TRUE(Drain(&q).empty());

  // The slice: the rows the training parts leave out.
  std::vector<int> slice;
  Batch batch;
  ASSERT_TRUE(ReadParts(ValidationPartsOf(config_, 0), 100, &batch, [&] {
                for (size_t i = 0; i < batch.size(); ++i) {
                  for (size_t j = batch.offsets[i]; j < batch.offsets[i + 1];
                       ++j) {
                    if (batch.slots[j] == 14) {
                      slice.push_back(row_of_.at(batch.signs[j]));
                    }
                  }
                }
                return absl::OkStatus();
              }).ok());
  ASSERT_EQ(slice.size(), 200u);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(slice[i], 800 + i) << i;
}

TEST_F(InputQueueTest, FileOrderWithoutAWindow) {
  InputQueue q(config_, 0, nullptr);
  const std::vector<int> rows = Drain(&q);
  ASSERT_EQ(rows.size(), 2u * kRows);
  for (int i = 0; i < 2 * kRows; ++i) ASSERT_EQ(rows[i], i % kRows) << i;
}

// Every epoch hands out each row once, each window's rows together but not
// in file order, and the two epochs in different orders.
TEST_F(InputQueueTest, WindowsShuffleWithinThemselves) {
  config_.mutable_data()->set_shuffle_buffer_rows(300);
  InputQueue q(config_, 0, nullptr);
  const std::vector<int> rows = Drain(&q);
  ASSERT_EQ(rows.size(), 2u * kRows);
  for (int epoch = 0; epoch < 2; ++epoch) {
    const auto begin = rows.begin() + epoch * kRows;
    EXPECT_EQ(std::set<int>(begin, begin + kRows).size(), size_t(kRows));
    for (int i = 0; i < kRows; ++i) {
      EXPECT_EQ(begin[i] / 300, i / 300) << "row " << begin[i] << " at " << i;
    }
    EXPECT_FALSE(std::is_sorted(begin, begin + kRows));
  }
  EXPECT_FALSE(
      std::equal(rows.begin(), rows.begin() + kRows, rows.begin() + kRows));
  InputQueue again(config_, 0, nullptr);
  EXPECT_EQ(Drain(&again), rows);
}

TEST_F(InputQueueTest, ResumeInsideAWindowContinuesItsOrder) {
  config_.mutable_data()->set_shuffle_buffer_rows(300);
  ExpectResumesExactly();
}

TEST_F(InputQueueTest, ResumeWithoutAWindowStartsAtTheOffset) {
  InputQueue whole(config_, 0, nullptr);
  const std::vector<int> expected = Drain(&whole);
  InputQueue first(config_, 0, nullptr);
  std::vector<int> rows = Drain(&first, 5);
  const coord::DataPosition at = first.Position();
  EXPECT_EQ(at.window_skip(), 0u);
  AppendResumed(at, &rows);
  EXPECT_EQ(rows, expected);
}

// Two ranks split the file by bytes; with windows each still trains each
// of its rows once per epoch, and together they cover the file.
TEST_F(InputQueueTest, RanksShuffleTheirOwnParts) {
  config_.mutable_data()->set_shuffle_buffer_rows(128);
  config_.mutable_data()->set_epochs(1);
  config_.mutable_cluster()->set_num_trainers(2);
  InputQueue q0(config_, 0, nullptr), q1(config_, 1, nullptr);
  const std::vector<int> r0 = Drain(&q0), r1 = Drain(&q1);
  std::set<int> all(r0.begin(), r0.end());
  for (int r : r1) EXPECT_TRUE(all.insert(r).second) << r << " in both";
  EXPECT_EQ(all.size(), size_t(kRows));
  EXPECT_EQ(r0.size() + r1.size(), size_t(kRows));
}

// Worker threads share one queue (as a trainer's do): with windows, each
// row still goes to exactly one batch per epoch.
TEST_F(InputQueueTest, ThreadsShareOneQueue) {
  config_.mutable_data()->set_shuffle_buffer_rows(300);
  InputQueue q(config_, 0, nullptr);
  std::vector<std::vector<int>> per_thread(4);
  std::vector<std::thread> threads;
  for (auto& rows : per_thread) {
    threads.emplace_back([&] { rows = Drain(&q); });
  }
  for (std::thread& t : threads) t.join();
  std::vector<int> count(kRows, 0);
  for (const auto& rows : per_thread) {
    for (int r : rows) ++count[r];
  }
  for (int r = 0; r < kRows; ++r) EXPECT_EQ(count[r], 2) << r;
}

// A window whose rows break data.max_bad_fraction fails the queue: the
// error stays, and no later Next hands out the window's good rows (nor
// moves the position a checkpoint would record).
TEST_F(InputQueueTest, AfterAnErrorNothingMoreIsHandedOut) {
  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/half-bad.tsv");
  {
    std::ofstream out(path);
    std::ifstream good(config_.data().train_files(0));
    std::string line;
    for (int r = 0; r < 600 && std::getline(good, line); ++r) {
      out << line << "\n";
    }
    for (int r = 0; r < 600; ++r) out << "not a criteo row\n";
  }
  config_.mutable_data()->set_train_files(0, path);
  config_.mutable_data()->set_shuffle_buffer_rows(1500);
  config_.mutable_data()->set_max_bad_fraction(0.01);
  InputQueue q(config_, 0, nullptr);
  Batch batch;
  absl::Status error;
  EXPECT_FALSE(q.Next(&batch, &error));
  EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << error;
  const std::string at = q.Position().SerializeAsString();
  for (int i = 0; i < 3; ++i) {
    absl::Status again;
    EXPECT_FALSE(q.Next(&batch, &again));
    EXPECT_EQ(again, error);
  }
  EXPECT_EQ(q.Position().SerializeAsString(), at);
}

// A small file of nothing but malformed lines (fewer than the 1000 rows
// the fraction is judged after mid-input) fails at the end of the input
// instead of training nothing.
TEST_F(InputQueueTest, AllMalformedFails) {
  const std::string path =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/garbage.tsv");
  std::ofstream(path) << "not\ta row\n\x1f\x8b binary\n";
  config_.mutable_data()->set_train_files(0, path);
  config_.mutable_data()->set_max_bad_fraction(0.01);
  for (uint32_t window : {0, 300}) {
    config_.mutable_data()->set_shuffle_buffer_rows(window);
    InputQueue q(config_, 0, nullptr);
    Batch batch;
    absl::Status error;
    EXPECT_FALSE(q.Next(&batch, &error));
    EXPECT_EQ(error.code(), absl::StatusCode::kDataLoss) << error;
    EXPECT_THAT(std::string(error.message()), testing::HasSubstr("4 of 4"));
  }
}

// data.max_bad_fraction is over the whole job: a trainer resumed near its
// end judges its few last rows together with those before the checkpoint.
TEST_F(InputQueueTest, ResumeJudgesBadRowsOverTheWholeInput) {
  {
    std::ofstream out(config_.data().train_files(0), std::ios::app);
    out << "bad row\nanother\n";  // 2 of 1002 (0.2%)
  }
  config_.mutable_data()->set_epochs(1);
  config_.mutable_data()->set_max_bad_fraction(0.01);
  for (uint32_t window : {0, 300}) {
    SCOPED_TRACE(absl::StrCat("window ", window));
    config_.mutable_data()->set_shuffle_buffer_rows(window);
    InputQueue whole(config_, 0, nullptr);
    EXPECT_EQ(Drain(&whole).size(), size_t(kRows));
    InputQueue first(config_, 0, nullptr);
    std::vector<int> rows = Drain(&first, 15);  // 960 rows; 2 bad of 42 left
    const coord::DataPosition at = first.Position();
    AppendResumed(at, &rows);  // Drain expects no error
    EXPECT_EQ(rows.size(), size_t(kRows));
  }
}

// BY_FILE: of three files and two trainers, rank 0 reads files 0 and 2
// whole, rank 1 file 1; a resume inside file 2's window goes on there.
TEST_F(InputQueueTest, ByFileGivesEachRankWholeFiles) {
  config_.mutable_data()->add_train_files(WriteRows("rows1.tsv", kRows));
  config_.mutable_data()->add_train_files(WriteRows("rows2.tsv", 2 * kRows));
  config_.mutable_data()->set_split(DataConfig::BY_FILE);
  config_.mutable_data()->set_epochs(1);
  config_.mutable_data()->set_shuffle_buffer_rows(300);
  config_.mutable_cluster()->set_num_trainers(2);
  InputQueue q0(config_, 0, nullptr), q1(config_, 1, nullptr);
  const std::vector<int> r0 = Drain(&q0), r1 = Drain(&q1);
  ASSERT_EQ(r0.size(), 2u * kRows);
  ASSERT_EQ(r1.size(), size_t(kRows));
  for (int i = 0; i < kRows; ++i) {
    EXPECT_LT(r0[i], kRows) << i;                           // file 0 first
    EXPECT_GE(r0[kRows + i], 2 * kRows) << kRows + i;       // then file 2
    EXPECT_TRUE(r1[i] >= kRows && r1[i] < 2 * kRows) << i;  // file 1
  }
  EXPECT_EQ(std::set<int>(r0.begin(), r0.end()).size(), 2u * kRows);
  EXPECT_EQ(std::set<int>(r1.begin(), r1.end()).size(), size_t(kRows));

  InputQueue first(config_, 0, nullptr);
  std::vector<int> rows = Drain(&first, 20);  // 1280 rows: inside file 2
  const coord::DataPosition at = first.Position();
  EXPECT_EQ(at.file_index(), 1u);
  AppendResumed(at, &rows);
  EXPECT_EQ(rows, r0);
}

// Avazu (with its header) and libffm files are read, shuffled, split
// between ranks and resumed like Criteo ones.
TEST_F(InputQueueTest, OtherFormatsShuffleSplitAndResume) {
  for (DataFormat format : {AVAZU_CSV, LIBFFM}) {
    SCOPED_TRACE(DataFormat_Name(format));
    config_.mutable_data()->set_format(format);
    config_.mutable_data()->set_train_files(
        0, WriteRows(absl::StrCat("rows-", format), 0, format));
    config_.mutable_data()->set_max_bad_fraction(0);
    config_.mutable_cluster()->set_num_trainers(1);
    for (uint32_t window : {0, 300}) {
      SCOPED_TRACE(absl::StrCat("window ", window));
      config_.mutable_data()->set_shuffle_buffer_rows(window);
      ExpectResumesExactly();
    }
    config_.mutable_cluster()->set_num_trainers(3);
    std::set<int> all;
    for (int rank = 0; rank < 3; ++rank) {
      InputQueue q(config_, rank, nullptr);
      for (int r : Drain(&q)) all.insert(r);
    }
    EXPECT_EQ(all.size(), size_t(kRows));
  }
}

// data.integer_features LOG_DENSE: every batch carries 13 dense inputs per
// row, its own row's, through shuffle windows and resumes (Drain checks
// I1's), and no integer bucket signs.
TEST_F(InputQueueTest, LogDenseInputsTravelWithTheirRows) {
  for (auto ints : {DataConfig::LOG_DENSE, DataConfig::BUCKETS_AND_LOG_DENSE}) {
    SCOPED_TRACE(DataConfig::IntegerFeatures_Name(ints));
    config_.mutable_data()->set_integer_features(ints);
    for (uint32_t window : {0, 300}) {
      config_.mutable_data()->set_shuffle_buffer_rows(window);
      ExpectResumesExactly();
    }
    InputQueue q(config_, 0, nullptr);
    Batch batch;
    absl::Status error;
    ASSERT_TRUE(q.Next(&batch, &error)) << error;
    EXPECT_EQ(batch.dense_dim, 13);
    EXPECT_EQ(batch.signs.size(),
              batch.size() * (ints == DataConfig::LOG_DENSE ? 26 : 39));
  }
}

// data.holdout_fraction without test_files: the ranks train on the file's
// first 75% (each row once an epoch, through windows, across a resume; the
// progress is of that part) and the test evaluation reads the rest; with
// test_files, the whole file trains and the test files are the test.
TEST_F(InputQueueTest, HoldoutTrainsTheHeadAndTestsTheTail) {
  config_.mutable_data()->set_holdout_fraction(0.25);
  config_.mutable_data()->set_shuffle_buffer_rows(128);
  config_.mutable_data()->set_epochs(1);
  config_.mutable_cluster()->set_num_trainers(2);
  std::vector<int> count(kRows, 0);
  for (int rank = 0; rank < 2; ++rank) {
    InputQueue first(config_, rank, nullptr);
    std::vector<int> rows = Drain(&first, 2);
    // A resume inside the head goes on with the rest of it.
    const coord::DataPosition at = first.Position();
    InputQueue resumed(config_, rank, &at);
    for (int r : Drain(&resumed)) rows.push_back(r);
    for (int r : rows) ++count[r];
  }
  for (int r = 0; r < kRows; ++r) EXPECT_EQ(count[r], r < 750) << r;
  // Progress is of the head: 700 of its 750 rows are most of it.
  config_.mutable_data()->set_shuffle_buffer_rows(0);
  config_.mutable_data()->set_batch_size(50);
  config_.mutable_cluster()->set_num_trainers(1);
  InputQueue q(config_, 0, nullptr);
  Drain(&q, 14);
  EXPECT_GT(q.FractionDone(), 0.9);
  EXPECT_LT(q.FractionDone(), 1.0);

  std::vector<DataPart> test = TestPartsOf(config_);
  ASSERT_EQ(test.size(), 1u);
  auto reader = OpenPart(test[0]);
  ASSERT_TRUE(reader.ok()) << reader.status();
  Batch batch;
  std::vector<int> tail;
  while ((*reader)->NextBatch(100, &batch)) {
    for (size_t j = 0; j < batch.signs.size(); ++j) {
      if (batch.slots[j] == 14) tail.push_back(row_of_.at(batch.signs[j]));
    }
  }
  ASSERT_EQ(tail.size(), 250u);
  for (int i = 0; i < 250; ++i) EXPECT_EQ(tail[i], 750 + i);

  config_.mutable_data()->add_test_files("test.tsv");
  for (const DataPart& part : TrainPartsOf(config_, 0)) {
    EXPECT_EQ(part.holdout_fraction, 0);
  }
  test = TestPartsOf(config_);
  ASSERT_EQ(test.size(), 1u);
  EXPECT_EQ(test[0].path, "test.tsv");
  EXPECT_EQ(test[0].holdout_fraction, 0);
}

}  // namespace
}  // namespace sampan
