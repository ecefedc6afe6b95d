// The streaming reader (`sampan run`) and LoadDataset (`sampan train-local`)
// make the same examples of the same file: for every format and integer
// option, plain or gzip, whole or as the union of its byte-range parts; and
// the head and tail of a held-out split (holdout.h) are train-local's.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "gtest/gtest.h"
#include "trainer/data/batch.h"
#include "trainer/data/criteo_reader.h"
#include "trainer/data/dataset.h"
#include "trainer/data/holdout.h"
#include "trainer/data/test_files.h"

namespace sampan {
namespace {

using test::TempPath;

// A deterministic stream of numbers for the generated lines.
class Draw {
 public:
  explicit Draw(uint64_t seed) : x_(seed) {}
  uint64_t Next(uint64_t below) { return (x_ = Mix64(x_ + 1)) % below; }

 private:
  uint64_t x_;
};

// 300 lines of `format`, a few of them malformed, one with a CR, and a
// header first for Avazu.
std::string Lines(DataFileFormat format) {
  Draw d(static_cast<uint64_t>(format) + 11);
  std::string text;
  if (format == DataFileFormat::kAvazu) {
    text = "id,click,hour";
    for (int c = 1; c <= 21; ++c) text += absl::StrCat(",C", c);
    text += "\n";
  }
  for (int i = 0; i < 300; ++i) {
    std::string line;
    const std::string label = d.Next(3) == 0 ? "1" : "0";
    switch (format) {
      case DataFileFormat::kCriteo:
      case DataFileFormat::kCriteoUnlabeled: {
        std::vector<std::string> ints, cats;
        for (int f = 0; f < kCriteoIntFields; ++f) {
          const int64_t v = int64_t(d.Next(2000)) - 3;
          ints.push_back(d.Next(4) == 0 ? "" : std::to_string(v));
        }
        for (int f = 0; f < kCriteoCatFields; ++f) {
          cats.push_back(d.Next(5) == 0 ? "" : absl::StrCat(d.Next(500)));
        }
        line = test::MakeCriteoLine(label, ints, cats);
        if (format == DataFileFormat::kCriteoUnlabeled) {
          line = line.substr(2);
        }
        break;
      }
      case DataFileFormat::kAvazu:
        line = absl::StrCat(1000 + i, d.Next(4) == 0 ? "" : "," + label, ",",
                            14102100 + d.Next(24));
        for (int c = 0; c < 21; ++c) absl::StrAppend(&line, ",", d.Next(30));
        break;
      case DataFileFormat::kLibsvm:
      case DataFileFormat::kLibffm:
        line = d.Next(2) == 0 ? label : (label == "1" ? "+1" : "-1");
        for (int k = 0, n = 1 + d.Next(8); k < n; ++k) {
          const bool ffm = format == DataFileFormat::kLibffm;
          absl::StrAppend(&line, d.Next(3) == 0 ? "\t" : " ",
                          ffm ? absl::StrCat(d.Next(6), ":") : "", d.Next(100),
                          d.Next(2) == 0 ? ":1" : ":0.5");
        }
        break;
      case DataFileFormat::kText:  // a format of its own test (formats_test)
        break;
    }
    if (i % 41 == 7) line = "x\tnot a row";
    if (i == 100) line += "\r";
    text += line + "\n";
  }
  return text;
}

// Every example of `from` appended to `to`.
void AppendAll(const Batch& from, Batch* to) {
  for (size_t i = 0; i < from.size(); ++i) to->Append(from, i);
}

struct Read {
  Batch rows;
  uint64_t bad = 0;
};

// Every row of `path` (of its bytes [begin, end)) read in `parts`
// byte-range parts, in part order.
Read ReadParts(const std::string& path, const ParseOptions& parse, int parts,
               uint64_t begin = 0, uint64_t end = UINT64_MAX) {
  Read read;
  read.rows.Clear();
  for (int part = 0; part < parts; ++part) {
    CriteoReaderOptions options;
    options.parse = parse;
    options.part = part;
    options.num_parts = parts;
    options.range_begin = begin;
    options.range_end = end;
    options.max_logged_errors = 0;
    auto reader = CriteoReader::Open(path, options);
    EXPECT_TRUE(reader.ok()) << reader.status();
    if (!reader.ok()) return read;
    Batch batch;
    while ((*reader)->NextBatch(7, &batch)) {
      EXPECT_EQ(batch.dense_dim, DenseDimOf(parse));
      EXPECT_EQ(batch.dense.size(), batch.size() * DenseDimOf(parse));
      AppendAll(batch, &read.rows);
    }
    EXPECT_TRUE((*reader)->read_status().ok());
    read.bad += (*reader)->bad_rows();
  }
  return read;
}

void ExpectSame(const Batch& got, const Batch& want) {
  EXPECT_EQ(got.labels, want.labels);
  EXPECT_EQ(got.offsets, want.offsets);
  EXPECT_EQ(got.signs, want.signs);
  EXPECT_EQ(got.slots, want.slots);
  EXPECT_EQ(got.dense, want.dense);
  EXPECT_EQ(got.dense_dim, want.dense_dim);
}

TEST(ReaderDatasetTest, SameExamplesInEveryFormatPlainGzipAndParts) {
  ParseOptions buckets, log_dense, both, empty_signs;
  log_dense.int_buckets = false;
  log_dense.int_log_dense = true;
  both.int_log_dense = true;
  empty_signs.empty_field_signs = true;
  std::vector<ParseOptions> cases;
  for (const ParseOptions& ints : {buckets, log_dense, both, empty_signs}) {
    for (DataFileFormat f :
         {DataFileFormat::kCriteo, DataFileFormat::kCriteoUnlabeled}) {
      cases.push_back(ints);
      cases.back().format = f;
    }
  }
  for (DataFileFormat f : {DataFileFormat::kAvazu, DataFileFormat::kLibsvm,
                           DataFileFormat::kLibffm}) {
    cases.push_back(both);  // integer options mean nothing here
    cases.back().format = f;
  }
  for (const ParseOptions& parse : cases) {
    SCOPED_TRACE(absl::StrCat("format ", static_cast<int>(parse.format),
                              " buckets ", parse.int_buckets, " log_dense ",
                              parse.int_log_dense, " empty_signs ",
                              parse.empty_field_signs));
    const std::string name =
        absl::StrCat("equal-", static_cast<int>(parse.format));
    const std::string plain = TempPath(name), gz = TempPath(name + ".gz");
    const std::string text = Lines(parse.format);
    test::WriteFile(plain, text);
    test::WriteGzip(gz, text);

    LoadOptions load;
    load.parse = parse;
    load.max_bad_fraction = 1;
    auto data = LoadDataset(plain, load);
    ASSERT_TRUE(data.ok()) << data.status();
    ASSERT_GT(data->size(), 250u);
    ASSERT_GT(data->bad_rows, 0u);
    std::vector<uint32_t> all(data->size());
    for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
    Batch want;
    data->Gather(all.data(), all.size(), &want);

    for (const std::string& path : {plain, gz}) {
      const Read whole = ReadParts(path, parse, 1);
      ExpectSame(whole.rows, want);
      EXPECT_EQ(whole.bad, data->bad_rows) << path;
    }
    for (int parts : {2, 3, 8}) {
      SCOPED_TRACE(absl::StrCat(parts, " parts"));
      const Read joined = ReadParts(plain, parse, parts);
      ExpectSame(joined.rows, want);
      EXPECT_EQ(joined.bad, data->bad_rows);
    }
  }
}

// LoadDataset's rows of lines [begin, end) of `path` (as fractions).
Batch Loaded(const std::string& path, const ParseOptions& parse, double begin,
             double end, uint64_t* lines) {
  LoadOptions load;
  load.parse = parse;
  load.max_bad_fraction = 1;
  load.begin_fraction = begin;
  load.end_fraction = end;
  auto data = LoadDataset(path, load);
  EXPECT_TRUE(data.ok()) << data.status();
  Batch rows;
  rows.Clear();
  if (!data.ok()) return rows;
  std::vector<uint32_t> all(data->size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  data->Gather(all.data(), all.size(), &rows);
  *lines = data->size() + data->bad_rows;
  return rows;
}

TEST(ReaderDatasetTest, HoldoutHeadAndTailAreTrainLocalsSplit) {
  for (DataFileFormat format : {DataFileFormat::kCriteo, DataFileFormat::kAvazu,
                                DataFileFormat::kLibffm}) {
    ParseOptions parse;
    parse.format = format;
    // Blank lines, which LoadDataset does not count, in the middle and at
    // the end; the last line without its newline.
    std::string text = Lines(format);
    text.insert(text.find('\n', text.size() / 3) + 1, "\n\n");
    text.insert(text.find('\n', text.size() * 2 / 3) + 1, "\n");
    text.pop_back();
    const std::string name = absl::StrCat("holdout-", static_cast<int>(format));
    const std::string plain = TempPath(name), gz = TempPath(name + ".gz");
    test::WriteFile(plain, text);
    test::WriteGzip(gz, text);
    // 1e-17: 1 - h is 1, every line in the head.
    for (double h : {0.1, 0.25, 0.37, 0.5, 0.9, 1e-17}) {
      SCOPED_TRACE(
          absl::StrCat("format ", static_cast<int>(format), " holdout ", h));
      uint64_t head_lines = 0, tail_lines = 0;
      const Batch head = Loaded(plain, parse, 0, 1 - h, &head_lines);
      const Batch tail = Loaded(plain, parse, 1 - h, 1, &tail_lines);
      ASSERT_GT(head.size(), 0u);
      if (h > 0.01) {
        ASSERT_GT(tail.size(), 0u);
      }
      for (const std::string& path : {plain, gz}) {
        SCOPED_TRACE(path);
        auto split = FindHoldoutSplit(path, format, h);
        ASSERT_TRUE(split.ok()) << split.status();
        EXPECT_EQ(split->head_lines, head_lines);
        EXPECT_EQ(split->tail_lines, tail_lines);
        if (h < 0.01) {
          EXPECT_EQ(split->tail_start, text.size());
        }
        // Gzip: one part only.
        for (int parts :
             path == gz ? std::vector<int>{1} : std::vector<int>{1, 2, 3}) {
          SCOPED_TRACE(absl::StrCat(parts, " parts"));
          ExpectSame(ReadParts(path, parse, parts, 0, split->tail_start).rows,
                     head);
          ExpectSame(ReadParts(path, parse, parts, split->tail_start).rows,
                     tail);
        }
        // A validation slice: the last v of the head, as train-local
        // carves it; the tail stays where it was.
        for (double v : {0.2, 0.5}) {
          SCOPED_TRACE(absl::StrCat("validation ", v));
          auto cut = FindHoldoutSplit(path, format, h, v);
          ASSERT_TRUE(cut.ok()) << cut.status();
          EXPECT_EQ(cut->tail_start, split->tail_start);
          EXPECT_EQ(cut->tail_lines, tail_lines);
          EXPECT_EQ(cut->validation_lines,
                    static_cast<uint64_t>(v * static_cast<double>(head_lines)));
          EXPECT_EQ(cut->head_lines + cut->validation_lines, head_lines);
          EXPECT_LE(cut->validation_start, cut->tail_start);
          const Batch train =
              ReadParts(path, parse, 1, 0, cut->validation_start).rows;
          const Batch slice =
              ReadParts(path, parse, 1, cut->validation_start, cut->tail_start)
                  .rows;
          if (head.size() == head_lines) {
            EXPECT_EQ(slice.size(), cut->validation_lines);
          }
          Batch joined = train;
          for (size_t i = 0; i < slice.size(); ++i) joined.Append(slice, i);
          ExpectSame(joined, head);
        }
      }
    }
  }
  EXPECT_FALSE(
      FindHoldoutSplit(TempPath("no-such-file"), DataFileFormat::kCriteo, 0.1)
          .ok());
}

}  // namespace
}  // namespace sampan
