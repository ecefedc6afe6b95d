#include "trainer/data/criteo_reader.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainer/data/batch.h"
#include "trainer/data/test_files.h"
#include "zlib.h"

namespace sampan {
namespace {

using test::MakeCriteoLine;
using test::TempPath;
using test::WriteFile;
using test::WriteGzip;
using ::testing::HasSubstr;
using ::testing::Not;

// The path of a fixture under $SAMPAN_DATA_DIR/criteo, or "" if absent.
std::string Fixture(const std::string& name) {
  const char* dir = std::getenv("SAMPAN_DATA_DIR");
  if (dir == nullptr || *dir == '\0') return "";
  const std::string path = std::string(dir) + "/criteo/" + name;
  std::ifstream in(path);
  return in.good() ? path : "";
}

struct Row {
  float label;
  std::vector<uint64_t> signs;
  bool operator==(const Row& o) const {
    return label == o.label && signs == o.signs;
  }
};

struct ReadResult {
  std::vector<Row> rows;
  uint64_t good = 0, bad = 0;
};

ReadResult ReadAll(const std::string& path, CriteoReaderOptions options,
                   size_t batch_rows = 7) {
  ReadResult result;
  auto reader = CriteoReader::Open(path, options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return result;
  Batch batch;
  while ((*reader)->NextBatch(batch_rows, &batch)) {
    EXPECT_LE(batch.size(), batch_rows);
    EXPECT_EQ(batch.offsets.size(), batch.size() + 1);
    for (size_t i = 0; i < batch.size(); ++i) {
      result.rows.push_back(
          {batch.labels[i],
           std::vector<uint64_t>(batch.signs.begin() + batch.offsets[i],
                                 batch.signs.begin() + batch.offsets[i + 1])});
    }
  }
  EXPECT_EQ(batch.size(), 0u);
  EXPECT_EQ((*reader)->fraction_done(), 1.0);
  result.good = (*reader)->good_rows();
  result.bad = (*reader)->bad_rows();
  EXPECT_EQ(result.good, result.rows.size());
  return result;
}

uint64_t IntSign(uint32_t slot, const std::string& token) {
  return FeatureSign(slot, token);
}

// --- Real fixtures
// ------------------------------------------------------------

TEST(CriteoFixtureTest, Labeled100) {
  const std::string path = Fixture("fixture_100.tsv");
  if (path.empty()) {
    GTEST_SKIP() << "fixture $SAMPAN_DATA_DIR/criteo/fixture_100.tsv not "
                    "found (set SAMPAN_DATA_DIR, e.g. "
                    "--test_env=SAMPAN_DATA_DIR=/work/shared/data)";
  }
  const ReadResult r = ReadAll(path, {}, 32);
  ASSERT_EQ(r.rows.size(), 100u);
  EXPECT_EQ(r.bad, 0u);
  size_t positives = 0, signs = 0;
  for (const Row& row : r.rows) {
    positives += row.label == 1.0f;
    signs += row.signs.size();
  }
  EXPECT_EQ(positives, 29u);
  EXPECT_EQ(signs, 3343u);  // non-empty fields, counted with awk

  // Line 1: I3, I4, I12, I13 and 10 categorical fields are empty.
  const Row& first = r.rows[0];
  EXPECT_EQ(first.label, 0.0f);
  ASSERT_EQ(first.signs.size(), 9u + 16u);
  EXPECT_EQ(first.signs[0], IntSign(1, "s2"));
  EXPECT_EQ(first.signs[1], IntSign(2, "s0"));
  EXPECT_EQ(first.signs[2], IntSign(5, "b47"));  // I5 = 957
  EXPECT_EQ(first.signs[9], FeatureSign(14, "05db9164"));
  EXPECT_EQ(first.signs.back(), FeatureSign(36, "32c7478e"));  // C23
  // Line 3: 4 integer fields empty, every categorical field present.
  EXPECT_EQ(r.rows[2].signs.size(), 9u + 26u);
  // Line 15: I2 = -1.
  const Row& negative = r.rows[14];
  EXPECT_EQ(negative.signs.size(), 10u + 21u);
  EXPECT_EQ(negative.signs[1], IntSign(2, "s-1"));
}

TEST(CriteoFixtureTest, Unlabeled200) {
  const std::string path = Fixture("fixture_unlabeled_200.tsv");
  if (path.empty()) {
    GTEST_SKIP() << "fixture $SAMPAN_DATA_DIR/criteo/fixture_unlabeled_200.tsv "
                    "not found (set SAMPAN_DATA_DIR, e.g. "
                    "--test_env=SAMPAN_DATA_DIR=/work/shared/data)";
  }
  CriteoReaderOptions options;
  options.parse.format = DataFileFormat::kCriteoUnlabeled;
  const ReadResult r = ReadAll(path, options, 64);
  ASSERT_EQ(r.rows.size(), 200u);
  EXPECT_EQ(r.bad, 0u);
  size_t signs = 0;
  for (const Row& row : r.rows) {
    EXPECT_EQ(row.label, 0.0f);
    signs += row.signs.size();
  }
  EXPECT_EQ(signs, 6770u);
  EXPECT_EQ(r.rows[0].signs.size(), 12u + 25u);
  EXPECT_EQ(r.rows[0].signs[0], IntSign(1, "s1"));

  // Read as labeled, every line is one field short.
  const ReadResult wrong = ReadAll(path, {}, 64);
  EXPECT_EQ(wrong.rows.size(), 0u);
  EXPECT_EQ(wrong.bad, 200u);
}

// --- CriteoReader on temporary files -----------------------------------------

TEST(CriteoReaderTest, OpenErrors) {
  auto missing = CriteoReader::Open(TempPath("does_not_exist.tsv"), {});
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("does_not_exist.tsv"));
  const std::string path = TempPath("open_errors.tsv");
  WriteFile(path, MakeCriteoLine("0", {}, {}) + "\n");
  CriteoReaderOptions options;
  options.part = 2;
  options.num_parts = 2;
  EXPECT_TRUE(
      absl::IsInvalidArgument(CriteoReader::Open(path, options).status()));
  options.part = 0;
  options.num_parts = 0;
  EXPECT_TRUE(
      absl::IsInvalidArgument(CriteoReader::Open(path, options).status()));
}

TEST(CriteoReaderTest, EmptyFile) {
  const std::string path = TempPath("empty.tsv");
  WriteFile(path, "");
  for (int parts : {1, 3}) {
    for (int part = 0; part < parts; ++part) {
      CriteoReaderOptions options;
      options.part = part;
      options.num_parts = parts;
      const ReadResult r = ReadAll(path, options);
      EXPECT_EQ(r.good, 0u);
      EXPECT_EQ(r.bad, 0u);
    }
  }
}

TEST(CriteoReaderTest, SkipsAndCountsBadLines) {
  const std::string path = TempPath("bad_lines.tsv");
  const std::string good = MakeCriteoLine("1", {"4"}, {"aa"});
  WriteFile(path, good + "\n" +                                // line 1
                      "0\tshort\n" +                           // line 2: bad
                      good + "\r\n" +                          // line 3
                      MakeCriteoLine("0", {"x"}, {}) + "\n" +  // line 4: bad
                      "\n" +                                   // line 5: bad
                      MakeCriteoLine("2", {}, {}) + "\n" +     // line 6: bad
                      good + "\n" +                            // line 7
                      "\n");  // a blank last line is skipped silently
  CriteoReaderOptions options;
  options.max_logged_errors = 2;
  testing::internal::CaptureStderr();
  const ReadResult r = ReadAll(path, options, 2);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.good, 3u);
  EXPECT_EQ(r.bad, 4u);
  for (const Row& row : r.rows) {
    EXPECT_EQ(row.label, 1.0f);
    EXPECT_EQ(row.signs,
              (std::vector<uint64_t>{IntSign(1, "b1"), FeatureSign(14, "aa")}));
  }
  EXPECT_THAT(
      log, HasSubstr(path + ":2: expected 40 tab-separated fields, got 2\n"));
  EXPECT_THAT(log,
              HasSubstr(path + ":4: field I1: expected integer, got \"x\"\n"));
  EXPECT_THAT(log, Not(HasSubstr(":5:")));
  EXPECT_THAT(log, Not(HasSubstr(":6:")));
}

TEST(CriteoReaderTest, LastLineWithoutNewline) {
  const std::string path = TempPath("no_newline.tsv");
  const std::string good = MakeCriteoLine("1", {"4"}, {"aa"});
  WriteFile(path, good + "\n" + good);
  const ReadResult r = ReadAll(path, {});
  EXPECT_EQ(r.good, 2u);
  EXPECT_EQ(r.bad, 0u);
}

TEST(CriteoReaderTest, EmptyFieldSignsOption) {
  const std::string path = TempPath("empty_signs.tsv");
  WriteFile(path, MakeCriteoLine("1", {"4"}, {"aa"}) + "\n");
  CriteoReaderOptions options;
  options.parse.empty_field_signs = true;
  const ReadResult r = ReadAll(path, options);
  ASSERT_EQ(r.good, 1u);
  ASSERT_EQ(r.rows[0].signs.size(), 39u);
  EXPECT_EQ(r.rows[0].signs[1], FeatureSign(2, ""));
  EXPECT_EQ(ReadAll(path, {}).rows[0].signs.size(), 2u);
}

TEST(CriteoReaderTest, LongLinesGrowTheBuffer) {
  const std::string path = TempPath("long_line.tsv");
  const std::string good = MakeCriteoLine("0", {"4"}, {"aa"});
  const std::string huge =
      MakeCriteoLine("1", {"4"}, {std::string(9 << 20, 'q')});
  WriteFile(path, good + "\n" + huge + "\n" + good + "\n");
  const ReadResult r = ReadAll(path, {});
  ASSERT_EQ(r.good, 3u);
  EXPECT_EQ(r.rows[1].label, 1.0f);
  EXPECT_EQ(r.rows[1].signs[1], FeatureSign(14, std::string(9 << 20, 'q')));
}

// A file of rows of varied length with a few bad ones, a CRLF line and no
// trailing newline.
std::string SplitTestFile() {
  std::string contents;
  uint64_t x = 7;
  for (int i = 0; i < 500; ++i) {
    x = Mix64(x + i);
    std::vector<std::string> ints, cats;
    for (int f = 0; f < kCriteoIntFields; ++f) {
      ints.push_back((x >> f) & 1 ? std::to_string((x >> (f + 3)) % 5000) : "");
    }
    const int width = 1 + static_cast<int>(x % 40);
    for (int f = 0; f < kCriteoCatFields; ++f) {
      cats.push_back((x >> (f + 20)) & 1
                         ? std::to_string(Mix64(x + f)).substr(0, width)
                         : "");
    }
    std::string line = MakeCriteoLine((x >> 60) & 1 ? "1" : "0", ints, cats);
    if (i % 97 == 13) line = "1\tbad\tline";
    if (i == 200) line += "\r";
    if (i > 0) contents += "\n";
    contents += line;
  }
  return contents;
}

TEST(CriteoReaderTest, PartsReadEveryRowExactlyOnce) {
  const std::string path = TempPath("split.tsv");
  WriteFile(path, SplitTestFile());
  CriteoReaderOptions quiet;
  quiet.max_logged_errors = 0;
  testing::internal::CaptureStderr();
  const ReadResult whole = ReadAll(path, quiet);
  testing::internal::GetCapturedStderr();
  ASSERT_EQ(whole.bad, 6u);
  ASSERT_EQ(whole.good, 494u);

  for (int parts : {1, 2, 3, 7, 64}) {
    ReadResult joined;
    for (int part = 0; part < parts; ++part) {
      CriteoReaderOptions options = quiet;
      options.part = part;
      options.num_parts = parts;
      testing::internal::CaptureStderr();
      const ReadResult r = ReadAll(path, options, 5);
      testing::internal::GetCapturedStderr();
      joined.rows.insert(joined.rows.end(), r.rows.begin(), r.rows.end());
      joined.good += r.good;
      joined.bad += r.bad;
    }
    EXPECT_EQ(joined.good, whole.good) << parts << " parts";
    EXPECT_EQ(joined.bad, whole.bad) << parts << " parts";
    EXPECT_TRUE(joined.rows == whole.rows) << parts << " parts";
  }
}

// A checkpoint records position() between batches; a reader opened there
// reads exactly the rows the first one had not reached.
TEST(CriteoReaderTest, ResumesAtPosition) {
  const std::string path = TempPath("resume.tsv");
  WriteFile(path, SplitTestFile());
  CriteoReaderOptions options;
  options.max_logged_errors = 0;
  options.part = 1;
  options.num_parts = 3;
  testing::internal::CaptureStderr();
  const ReadResult whole = ReadAll(path, options, 5);
  auto first = CriteoReader::Open(path, options);
  ASSERT_TRUE(first.ok());
  Batch batch;
  std::vector<float> labels;
  for (int b = 0; b < 4; ++b) {
    ASSERT_TRUE((*first)->NextBatch(5, &batch));
    labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
  }
  options.start_offset = (*first)->position();
  const ReadResult rest = ReadAll(path, options, 5);
  testing::internal::GetCapturedStderr();
  ASSERT_EQ(labels.size() + rest.rows.size(), whole.rows.size());
  for (size_t i = 0; i < rest.rows.size(); ++i) {
    EXPECT_TRUE(rest.rows[i] == whole.rows[labels.size() + i]) << i;
  }
  options.start_offset = 1;  // before the part's first line
  EXPECT_TRUE(
      absl::IsInvalidArgument(CriteoReader::Open(path, options).status()));
}

TEST(CriteoReaderTest, MorePartsThanBytes) {
  const std::string path = TempPath("tiny.tsv");
  const std::string a = MakeCriteoLine("0", {}, {"a"}),
                    b = MakeCriteoLine("1", {}, {"b"});
  WriteFile(path, a + "\n" + b + "\n");
  const int parts = static_cast<int>(a.size() + b.size()) + 10;
  std::vector<Row> rows;
  for (int part = 0; part < parts; ++part) {
    CriteoReaderOptions options;
    options.part = part;
    options.num_parts = parts;
    const ReadResult r = ReadAll(path, options);
    EXPECT_EQ(r.bad, 0u);
    rows.insert(rows.end(), r.rows.begin(), r.rows.end());
  }
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].label, 0.0f);
  EXPECT_EQ(rows[1].label, 1.0f);
}

TEST(CriteoReaderTest, PartsReportAbsoluteLineNumbers) {
  const std::string path = TempPath("split_lines.tsv");
  const std::string good = MakeCriteoLine("0", {"1"}, {"aa"});
  std::string contents;
  for (int i = 1; i <= 30; ++i) contents += (i == 25 ? "bad" : good) + "\n";
  WriteFile(path, contents);
  CriteoReaderOptions options;
  options.part = 2;
  options.num_parts = 3;
  testing::internal::CaptureStderr();
  const ReadResult r = ReadAll(path, options);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.good, 9u);
  EXPECT_EQ(r.bad, 1u);
  EXPECT_EQ(log, path + ":25: expected 40 tab-separated fields, got 1\n");
}

TEST(CriteoReaderTest, FractionDoneGrows) {
  const std::string path = TempPath("fraction.tsv");
  std::string contents;
  for (int i = 0; i < 100; ++i)
    contents += MakeCriteoLine("0", {"1"}, {"aa"}) + "\n";
  WriteFile(path, contents);
  auto reader = CriteoReader::Open(path, {});
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->fraction_done(), 0.0);
  Batch batch;
  ASSERT_TRUE((*reader)->NextBatch(50, &batch));
  EXPECT_NEAR((*reader)->fraction_done(), 0.5, 0.01);
  ASSERT_TRUE((*reader)->NextBatch(50, &batch));
  EXPECT_FALSE((*reader)->NextBatch(50, &batch));
  EXPECT_EQ((*reader)->fraction_done(), 1.0);
}

}  // namespace
}  // namespace sampan

namespace sampan {
namespace {

// A gzip file reads as its plain twin, row for row (a blank last line
// included), and resumes at an uncompressed position.
TEST(CriteoReaderTest, GzipReadsAndResumesLikePlain) {
  const std::string plain = TempPath("plain.tsv"), gz = TempPath("rows.tsv.gz");
  WriteFile(plain, SplitTestFile() + "\n\n");
  WriteGzip(gz, SplitTestFile() + "\n\n");
  CriteoReaderOptions quiet;
  quiet.max_logged_errors = 0;
  testing::internal::CaptureStderr();
  const ReadResult expected = ReadAll(plain, quiet);
  const ReadResult got = ReadAll(gz, quiet);
  EXPECT_EQ(got.good, expected.good);
  EXPECT_EQ(got.bad, expected.bad);
  EXPECT_TRUE(got.rows == expected.rows);

  auto first = CriteoReader::Open(gz, quiet);
  ASSERT_TRUE(first.ok()) << first.status();
  Batch batch;
  size_t read = 0;
  for (int b = 0; b < 9; ++b) {
    ASSERT_TRUE((*first)->NextBatch(5, &batch));
    read += batch.size();
  }
  EXPECT_GT((*first)->fraction_done(), 0.0);
  CriteoReaderOptions resume = quiet;
  resume.start_offset = (*first)->position();
  const ReadResult rest = ReadAll(gz, resume, 5);
  testing::internal::GetCapturedStderr();
  ASSERT_EQ(read + rest.rows.size(), expected.rows.size());
  for (size_t i = 0; i < rest.rows.size(); ++i) {
    EXPECT_TRUE(rest.rows[i] == expected.rows[read + i]) << i;
  }
}

TEST(CriteoReaderTest, GzipCannotBeSplitByBytes) {
  const std::string gz = TempPath("split.tsv.gz");
  WriteGzip(gz, SplitTestFile());
  CriteoReaderOptions options;
  options.num_parts = 2;
  const absl::Status s = CriteoReader::Open(gz, options).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("data.split: BY_FILE"));
  options.num_parts = 1;
  options.start_offset = 1 << 30;
  EXPECT_THAT(std::string(CriteoReader::Open(gz, options).status().message()),
              HasSubstr("past the end"));
}

// A truncated gzip stream ends the rows early; read_status says so.
TEST(CriteoReaderTest, TruncatedGzipIsAReadError) {
  const std::string whole = TempPath("whole.tsv.gz"), cut = TempPath("cut.gz");
  WriteGzip(whole, SplitTestFile());
  std::ifstream in(whole, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  WriteFile(cut, bytes.substr(0, bytes.size() / 2));
  CriteoReaderOptions quiet;
  quiet.max_logged_errors = 0;
  auto reader = CriteoReader::Open(cut, quiet);
  ASSERT_TRUE(reader.ok()) << reader.status();
  Batch batch;
  testing::internal::CaptureStderr();
  while ((*reader)->NextBatch(50, &batch)) {
  }
  testing::internal::GetCapturedStderr();
  EXPECT_TRUE(absl::IsDataLoss((*reader)->read_status()))
      << (*reader)->read_status();
  EXPECT_THAT(std::string((*reader)->read_status().message()),
              HasSubstr("cut.gz: gzip read error"));
  EXPECT_GT((*reader)->good_rows(), 0u);
}

}  // namespace
}  // namespace sampan
