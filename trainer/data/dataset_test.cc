#include "trainer/data/dataset.h"

#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/hash.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

std::string WritePlain(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  std::ofstream(path) << text;
  return path;
}

std::string WriteGzip(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), text.size());
  gzclose(f);
  return path;
}

std::string CriteoLine(int label, const std::string& c1) {
  std::string line = std::to_string(label);
  for (int i = 0; i < 13; ++i) line += i == 0 ? "\t5" : "\t";
  line += "\t" + c1;
  for (int i = 1; i < 26; ++i) line += "\t";
  return line + "\n";
}

TEST(DatasetTest, CriteoGzipMatchesPlainAndCarriesSlots) {
  const std::string text = CriteoLine(1, "aa") + CriteoLine(0, "bb");
  for (const std::string& path :
       {WritePlain("c.tsv", text), WriteGzip("c.tsv.gz", text)}) {
    auto d = LoadDataset(path, LoadOptions());
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(d->size(), 2u);
    EXPECT_EQ(d->labels[0], 1);
    EXPECT_EQ(d->offsets, (std::vector<uint32_t>{0, 2, 4}));
    EXPECT_EQ(d->slots, (std::vector<uint16_t>{1, 14, 1, 14}));
    EXPECT_EQ(d->signs[1], FeatureSign(14, "aa"));
    EXPECT_EQ(d->signs[3], FeatureSign(14, "bb"));
  }
}

// Plain or gzip, a last line without its newline, empty lines, and a line
// longer than the 1 MiB reads it spans.
TEST(ForEachFileLineTest, StreamsEveryLine) {
  const std::string long_line(3 << 20, 'x');
  const std::string text = "a b\n\n" + long_line + "\nlast";
  for (const std::string& path :
       {WritePlain("lines.txt", text), WriteGzip("lines.txt.gz", text)}) {
    std::vector<std::string> lines;
    ASSERT_TRUE(ForEachFileLine(path, [&](std::string_view l) {
                  lines.emplace_back(l);
                }).ok());
    ASSERT_EQ(lines.size(), 4u) << path;
    EXPECT_EQ(lines[0], "a b");
    EXPECT_EQ(lines[1], "");
    EXPECT_EQ(lines[2], long_line);
    EXPECT_EQ(lines[3], "last");
  }
  EXPECT_EQ(
      ForEachFileLine(TempPath("missing"), [](std::string_view) {}).code(),
      absl::StatusCode::kNotFound);
  // A gzip file cut short is an error, not a shorter file.
  std::string gz;
  {
    std::ifstream in(TempPath("lines.txt.gz"), std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string cut = WritePlain("cut.gz", gz.substr(0, gz.size() / 2));
  EXPECT_EQ(ForEachFileLine(cut, [](std::string_view) {}).code(),
            absl::StatusCode::kDataLoss);
}

TEST(DatasetTest, PartsAndFractionsSplitLinesExactlyOnce) {
  std::string text;
  for (int i = 0; i < 10; ++i) text += CriteoLine(i % 2, std::to_string(i));
  const std::string path = WritePlain("split.tsv", text);
  std::vector<uint64_t> seen;
  for (int part = 0; part < 3; ++part) {
    LoadOptions o;
    o.part = part;
    o.num_parts = 3;
    auto d = LoadDataset(path, o);
    ASSERT_TRUE(d.ok());
    for (size_t i = 0; i < d->size(); ++i) seen.push_back(d->signs[2 * i + 1]);
  }
  ASSERT_EQ(seen.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(seen[i], FeatureSign(14, std::to_string(i)));
  }
  LoadOptions tail;
  tail.begin_fraction = 0.9;
  auto d = LoadDataset(path, tail);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->size(), 1u);
  EXPECT_EQ(d->signs[1], FeatureSign(14, "9"));
}

TEST(DatasetTest, AvazuWithAndWithoutHeader) {
  std::string row = "1000009418151094273,1,14102100";
  for (int i = 0; i < 21; ++i) row += ",v" + std::to_string(i);
  std::string header = "id,click,hour";
  for (int i = 0; i < 21; ++i) header += ",c" + std::to_string(i);
  LoadOptions o;
  o.parse.format = DataFileFormat::kAvazu;
  for (const std::string& text : {row + "\n", header + "\n" + row + "\n"}) {
    auto d = LoadDataset(WritePlain("a.csv", text), o);
    ASSERT_TRUE(d.ok()) << d.status();
    ASSERT_EQ(d->size(), 1u);
    EXPECT_EQ(d->labels[0], 1);
    ASSERT_EQ(d->signs.size(), 22u);
    EXPECT_EQ(d->signs[0], FeatureSign(1, "00"));
    EXPECT_EQ(d->signs[21], FeatureSign(22, "v20"));
    EXPECT_EQ(d->slots[21], 22);
  }
}

TEST(DatasetTest, LibsvmAndLibffm) {
  LoadOptions o;
  o.parse.format = DataFileFormat::kLibffm;
  o.max_bad_fraction = 0.5;
  auto d =
      LoadDataset(WritePlain("f.ffm", "1 0:12:1 3:7:0.5\n-1 2:9:1\nx\n"), o);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ(d->bad_rows, 1u);
  EXPECT_EQ(d->labels, (std::vector<float>{1, 0}));
  EXPECT_EQ(d->signs[1], FeatureSign(4, "7"));
  EXPECT_EQ(d->slots, (std::vector<uint16_t>{1, 4, 3}));
  o.parse.format = DataFileFormat::kLibsvm;
  o.max_bad_fraction = 0;
  d = LoadDataset(WritePlain("s.svm", "0 5:1 6:2\n1 7\n"), o);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->signs,
            (std::vector<uint64_t>{FeatureSign(1, "5"), FeatureSign(1, "6"),
                                   FeatureSign(1, "7")}));
  d = LoadDataset(WritePlain("bad.svm", "0 5:1\nnot a row\n"), o);
  EXPECT_FALSE(d.ok());
}

TEST(DatasetTest, GatherCopiesExamples) {
  auto d =
      LoadDataset(WritePlain("g.tsv", CriteoLine(1, "a") + CriteoLine(0, "b")),
                  LoadOptions());
  ASSERT_TRUE(d.ok());
  Batch b;
  const uint32_t index[] = {1, 1, 0};
  d->Gather(index, 3, &b);
  EXPECT_EQ(b.labels, (std::vector<float>{0, 0, 1}));
  EXPECT_EQ(b.offsets, (std::vector<uint32_t>{0, 2, 4, 6}));
  EXPECT_EQ(b.signs[5], FeatureSign(14, "a"));
  EXPECT_EQ(b.slots.size(), 6u);
}

TEST(DatasetTest, IntegerFieldsAsLogDenseInputs) {
  // I1 = 5, I2 = -3, the rest empty; C1 = "a".
  std::string text = "1\t5\t-3";
  for (int i = 2; i < 13; ++i) text += "\t";
  text += "\ta";
  for (int i = 1; i < 26; ++i) text += "\t";
  const std::string path = WritePlain("dense.tsv", text + "\n");
  LoadOptions o;
  o.parse.int_log_dense = true;
  auto both = LoadDataset(path, o);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->dense_dim, 13);
  ASSERT_EQ(both->dense.size(), 13u);
  EXPECT_FLOAT_EQ(both->dense[0], std::log1p(5.0f));
  EXPECT_FLOAT_EQ(both->dense[1], -std::log1p(3.0f));
  EXPECT_EQ(both->dense[2], 0.0f);
  EXPECT_EQ(both->signs.size(), 3u);  // two bucket signs and C1

  o.parse.empty_field_signs = true;
  auto with_empty = LoadDataset(path, o);
  ASSERT_TRUE(with_empty.ok());
  EXPECT_EQ(with_empty->signs.size(), 39u);
  EXPECT_EQ(with_empty->signs[2], FeatureSign(3, ""));
  o.parse.empty_field_signs = false;

  o.parse.int_buckets = false;
  auto dense_only = LoadDataset(path, o);
  ASSERT_TRUE(dense_only.ok());
  EXPECT_EQ(dense_only->signs, (std::vector<uint64_t>{FeatureSign(14, "a")}));
  EXPECT_EQ(dense_only->slots, (std::vector<uint16_t>{14}));
  Batch b;
  const uint32_t index[] = {0, 0};
  dense_only->Gather(index, 2, &b);
  EXPECT_EQ(b.dense_dim, 13);
  ASSERT_EQ(b.dense.size(), 26u);
  EXPECT_FLOAT_EQ(b.dense[13], std::log1p(5.0f));
}

TEST(DatasetTest, MergeRareSignsUsesTrainCounts) {
  Dataset train, test;
  auto line = [](int label, const std::string& c1) {
    std::string l = CriteoLine(label, c1);
    l.pop_back();  // the newline
    return l;
  };
  train.AddLine(line(1, "common"));
  train.AddLine(line(0, "common"));
  train.AddLine(line(0, "once"));
  test.AddLine(line(0, "common"));
  test.AddLine(line(0, "unseen"));
  MergeRareSigns(2, &train, {&test});
  const uint64_t rare = FeatureSign(14, "__rare__");
  EXPECT_EQ(train.signs[1], FeatureSign(14, "common"));
  EXPECT_EQ(train.signs[5], rare);
  EXPECT_EQ(test.signs[1], FeatureSign(14, "common"));
  EXPECT_EQ(test.signs[3], rare);
  // I1 = 5 occurs in every row: kept.
  EXPECT_EQ(train.signs[4], test.signs[2]);
  EXPECT_NE(train.signs[4], rare);
}

TEST(DatasetTest, RealAvazuAndCriteoFiles) {
  const char* dir = std::getenv("SAMPAN_DATA_DIR");
  if (dir == nullptr) GTEST_SKIP() << "SAMPAN_DATA_DIR not set: no real data";
  // `make test` always sets it, to ../shared/data, which users lack.
  if (!std::filesystem::exists(std::string(dir) + "/avazu/avazu_5999.csv")) {
    GTEST_SKIP() << dir << "/avazu/avazu_5999.csv not found: no real data";
  }
  LoadOptions o;
  o.parse.format = DataFileFormat::kAvazu;
  o.max_bad_fraction = 0;
  auto a = LoadDataset(std::string(dir) + "/avazu/avazu_5999.csv", o);
  ASSERT_TRUE(a.ok()) << a.status();
  // 5999 newline-terminated rows plus an unterminated last one.
  EXPECT_EQ(a->size(), 6000u);
  EXPECT_EQ(a->bad_rows, 0u);
  a = LoadDataset(std::string(dir) + "/avazu/avazu_sample_with_header_100.csv",
                  o);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->size(), 100u);
  o.parse.format = DataFileFormat::kCriteoUnlabeled;
  auto c =
      LoadDataset(std::string(dir) + "/criteo/fixture_unlabeled_200.tsv", o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->size(), 200u);
}

}  // namespace
}  // namespace sampan
