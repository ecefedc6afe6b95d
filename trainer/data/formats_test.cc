#include "trainer/data/formats.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/hash.h"
#include "gtest/gtest.h"
#include "trainer/data/test_files.h"

namespace sampan {
namespace {

using test::MakeCriteoLine;

uint64_t IntSign(uint32_t slot, const std::string& token) {
  return FeatureSign(slot, token);
}

TEST(ParseCriteoLineTest, BucketsIntegers) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"0", "s0"},
      {"1", "s1"},
      {"2", "s2"},
      {"-5", "s-5"},
      {"-1", "s-1"},
      {"3", "b1"},  // floor(ln(3)^2) = 1, not the sign of 1
      {"4", "b1"},
      {"5", "b2"},
      {"10", "b5"},                      // ln(10)^2 = 5.30
      {"1000", "b47"},                   // ln(1000)^2 = 47.7
      {"9223372036854775807", "b1906"},  // ln(2^63-1)^2 = 1906.9
      {"-9223372036854775808", "s-9223372036854775808"},
  };
  for (const auto& [value, bucket] : cases) {
    std::vector<uint64_t> signs;
    float label = -1;
    ASSERT_TRUE(ParseCriteoLine(MakeCriteoLine("1", {"", "", value}, {}), true,
                                &label, &signs)
                    .ok())
        << value;
    EXPECT_EQ(label, 1.0f);
    ASSERT_EQ(signs.size(), 1u) << value;
    EXPECT_EQ(signs[0], IntSign(3, bucket)) << value << " -> " << bucket;
  }
}

TEST(ParseCriteoLineTest, SlotsAndEmptyFields) {
  std::vector<uint64_t> signs = {42};  // appended to, not replaced
  float label = -1;
  const std::string line = MakeCriteoLine(
      "0", {"7", "", "", "", "", "", "", "", "", "", "", "", "-2"},
      {"05db9164", "", "x", "", "", "", "", "", "", "", "", "", "",
       "",         "", "",  "", "", "", "", "", "", "", "", "", "ab"});
  ASSERT_TRUE(ParseCriteoLine(line, true, &label, &signs).ok());
  EXPECT_EQ(label, 0.0f);
  EXPECT_EQ(signs, (std::vector<uint64_t>{
                       42, IntSign(1, "b3"), IntSign(13, "s-2"),
                       FeatureSign(14, "05db9164"), FeatureSign(16, "x"),
                       FeatureSign(39, "ab")}));
}

TEST(ParseCriteoLineTest, AllEmptyRowHasNoSigns) {
  std::vector<uint64_t> signs;
  float label = -1;
  ASSERT_TRUE(
      ParseCriteoLine(MakeCriteoLine("1", {}, {}), true, &label, &signs).ok());
  EXPECT_EQ(label, 1.0f);
  EXPECT_TRUE(signs.empty());
}

TEST(ParseCriteoLineTest, EmptyFieldSignsMakeMissingAFeature) {
  const std::string line = MakeCriteoLine("0", {"7", "", "0"}, {"", "x"});
  std::vector<uint64_t> signs;
  std::vector<uint16_t> slots;
  float label = -1;
  ASSERT_TRUE(ParseCriteoLine(line, true, &label, &signs, &slots).ok());
  EXPECT_EQ(signs.size(), 3u);  // I1, I3, C2
  signs.clear();
  slots.clear();
  ASSERT_TRUE(ParseCriteoLine(line, true, &label, &signs, &slots, true).ok());
  ASSERT_EQ(signs.size(), 39u);
  for (int i = 0; i < 39; ++i) EXPECT_EQ(slots[i], i + 1);
  EXPECT_EQ(signs[0], IntSign(1, "b3"));
  EXPECT_EQ(signs[1], FeatureSign(2, ""));
  EXPECT_EQ(signs[2], IntSign(3, "s0"));  // zero is a value, not missing
  EXPECT_NE(signs[1], FeatureSign(3, ""));
  EXPECT_EQ(signs[13], FeatureSign(14, ""));
  EXPECT_EQ(signs[14], FeatureSign(15, "x"));
  EXPECT_EQ(signs[38], FeatureSign(39, ""));
}

TEST(ParseCriteoLineTest, UnlabeledAndCarriageReturn) {
  std::string line = MakeCriteoLine("1", {"5"}, {"abc"});
  std::string unlabeled = line.substr(2) + "\r";  // drop "1\t", add CR
  std::vector<uint64_t> labeled_signs, signs;
  float label = -1;
  ASSERT_TRUE(ParseCriteoLine(line, true, &label, &labeled_signs).ok());
  ASSERT_TRUE(ParseCriteoLine(unlabeled, false, &label, &signs).ok());
  EXPECT_EQ(label, 0.0f);
  EXPECT_EQ(signs, labeled_signs);
  // The CR is not part of the last token.
  signs.clear();
  ASSERT_TRUE(ParseCriteoLine(line + "\r", true, &label, &signs).ok());
  EXPECT_EQ(signs, labeled_signs);
}

TEST(ParseCriteoLineTest, Errors) {
  struct Case {
    std::string line;
    bool labeled;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"0\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\t11", true,
       "expected 40 tab-separated fields, got 12"},
      {"", true, "expected 40 tab-separated fields, got 1"},
      {MakeCriteoLine("0", {}, {}) + "\textra", true,
       "expected 40 tab-separated fields, got 41"},
      {MakeCriteoLine("0", {}, {}), false,
       "expected 39 tab-separated fields, got 40"},
      {MakeCriteoLine("7", {}, {}), true, "label: expected 0 or 1, got \"7\""},
      {MakeCriteoLine("", {}, {}), true, "label: expected 0 or 1, got \"\""},
      {MakeCriteoLine("01", {}, {}), true,
       "label: expected 0 or 1, got \"01\""},
      {MakeCriteoLine("0", {"", "", "x"}, {}), true,
       "field I3: expected integer, got \"x\""},
      {MakeCriteoLine("0", {"12a"}, {}), true,
       "field I1: expected integer, got \"12a\""},
      {MakeCriteoLine(
           "0", {"", "", "", "", "", "", "", "", "", "", "", "", "1.5"}, {}),
       true, "field I13: expected integer, got \"1.5\""},
      {MakeCriteoLine("0", {"+3"}, {}), true,
       "field I1: expected integer, got \"+3\""},
      {MakeCriteoLine("0", {"-"}, {}), true,
       "field I1: expected integer, got \"-\""},
      {MakeCriteoLine("0", {"99999999999999999999"}, {}), true,
       "field I1: expected integer, got \"99999999999999999999\""},
      {MakeCriteoLine("0", {" 3"}, {}), true,
       "field I1: expected integer, got \" 3\""},
  };
  for (const Case& c : cases) {
    std::vector<uint64_t> signs = {1, 2, 3};
    float label = -1;
    const absl::Status status =
        ParseCriteoLine(c.line, c.labeled, &label, &signs);
    EXPECT_TRUE(absl::IsInvalidArgument(status)) << c.line;
    EXPECT_EQ(status.message(), c.message) << c.line;
    EXPECT_EQ(signs, (std::vector<uint64_t>{1, 2, 3})) << "signs changed";
  }
}

TEST(ParseCriteoLineTest, LongBadFieldIsTruncatedInMessage) {
  std::vector<uint64_t> signs;
  float label;
  const absl::Status status = ParseCriteoLine(
      MakeCriteoLine("0", {std::string(1000, 'z')}, {}), true, &label, &signs);
  EXPECT_TRUE(absl::IsInvalidArgument(status));
  EXPECT_LT(status.message().size(), 100u);
}

struct Parsed {
  absl::Status status;
  float label = -1;
  std::vector<uint64_t> signs;
  std::vector<uint16_t> slots;
  std::vector<float> dense;
};

Parsed Parse(const std::string& line, const ParseOptions& options) {
  Parsed p;
  p.status = ParseLine(line, options, &p.label, &p.signs, &p.slots, &p.dense);
  return p;
}

ParseOptions Format(DataFileFormat format) {
  ParseOptions o;
  o.format = format;
  return o;
}

TEST(ParseLineTest, CriteoIntegersAsBucketsDenseOrBoth) {
  const std::string line =
      MakeCriteoLine("1", {"5", "-3", "", "0"}, {"a"}) + "\r";
  ParseOptions o;
  Parsed buckets = Parse(line, o);
  ASSERT_TRUE(buckets.status.ok()) << buckets.status;
  EXPECT_EQ(buckets.slots, (std::vector<uint16_t>{1, 2, 4, 14}));
  EXPECT_TRUE(buckets.dense.empty());
  EXPECT_EQ(DenseDimOf(o), 0);

  o.int_log_dense = true;
  EXPECT_EQ(DenseDimOf(o), kCriteoIntFields);
  const Parsed both = Parse(line, o);
  ASSERT_TRUE(both.status.ok()) << both.status;
  EXPECT_EQ(both.signs, buckets.signs);
  ASSERT_EQ(both.dense.size(), size_t(kCriteoIntFields));
  EXPECT_FLOAT_EQ(both.dense[0], std::log1p(5.0f));
  EXPECT_FLOAT_EQ(both.dense[1], -std::log1p(3.0f));
  EXPECT_EQ(both.dense[2], 0.0f);
  EXPECT_EQ(both.dense[3], 0.0f);

  o.int_buckets = false;
  o.empty_field_signs = true;  // integers' empty signs go with the buckets
  const Parsed dense = Parse(line, o);
  ASSERT_TRUE(dense.status.ok()) << dense.status;
  EXPECT_EQ(dense.signs.size(), size_t(kCriteoCatFields));
  EXPECT_EQ(dense.slots[0], 14);
  EXPECT_EQ(dense.dense, both.dense);

  // A bad line adds no dense inputs either.
  const Parsed bad = Parse(MakeCriteoLine("1", {"5", "x"}, {}), o);
  EXPECT_EQ(bad.status.message(), "field I2: expected integer, got \"x\"");
  EXPECT_TRUE(bad.signs.empty() && bad.slots.empty() && bad.dense.empty());
}

TEST(ParseLineTest, OnlyCriteoHasDenseInputs) {
  ParseOptions o = Format(DataFileFormat::kLibsvm);
  o.int_log_dense = true;
  o.int_buckets = false;
  EXPECT_EQ(DenseDimOf(o), 0);
  const Parsed p = Parse("+1 4:1 9", o);
  ASSERT_TRUE(p.status.ok()) << p.status;
  EXPECT_EQ(p.signs,
            (std::vector<uint64_t>{FeatureSign(1, "4"), FeatureSign(1, "9")}));
  EXPECT_EQ(p.label, 1.0f);
  EXPECT_TRUE(p.dense.empty());
}

TEST(ParseLineTest, AvazuLabeledAndUnlabeled) {
  std::string row = "10000094,0,14102113";
  for (int i = 0; i < 21; ++i) row += ",v" + std::to_string(i);
  const Parsed labeled = Parse(row + "\r", Format(DataFileFormat::kAvazu));
  ASSERT_TRUE(labeled.status.ok()) << labeled.status;
  EXPECT_EQ(labeled.label, 0.0f);
  ASSERT_EQ(labeled.signs.size(), 22u);
  EXPECT_EQ(labeled.signs[0], FeatureSign(1, "13"));
  EXPECT_EQ(labeled.signs[21], FeatureSign(22, "v20"));
  const std::string unlabeled = "10000094" + row.substr(row.find(",1410"));
  const Parsed test = Parse(unlabeled, Format(DataFileFormat::kAvazu));
  ASSERT_TRUE(test.status.ok()) << test.status;
  EXPECT_EQ(test.signs, labeled.signs);
  EXPECT_TRUE(IsHeaderLine("id,click,hour,C1", DataFileFormat::kAvazu));
  EXPECT_FALSE(IsHeaderLine(row, DataFileFormat::kAvazu));
  EXPECT_FALSE(IsHeaderLine("id,click,hour", DataFileFormat::kLibsvm));
}

TEST(ParseLineTest, ErrorsNameTheField) {
  std::string avazu = "1,2,14102100";
  for (int i = 0; i < 21; ++i) avazu += ",v";
  std::string short_hour = "1,1,4";
  for (int i = 0; i < 21; ++i) short_hour += ",v";
  struct Case {
    std::string line;
    DataFileFormat format;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"a,b,c", DataFileFormat::kAvazu,
       "expected 24 comma-separated fields (23 without click), got 3"},
      {avazu, DataFileFormat::kAvazu,
       "field click: expected 0 or 1, got \"2\""},
      {short_hour, DataFileFormat::kAvazu,
       "field hour: expected YYMMDDHH, got \"4\""},
      {"", DataFileFormat::kLibsvm, "label: expected a number, got \"\""},
      {"yes 1:1", DataFileFormat::kLibsvm,
       "label: expected a number, got \"yes\""},
      {"+-1 1:1", DataFileFormat::kLibsvm,
       "label: expected a number, got \"+-1\""},
      {"1 3:1 :2", DataFileFormat::kLibsvm,
       "field feature 2: expected an index, got \":2\""},
      {"1 0:3 7", DataFileFormat::kLibffm,
       "field feature 2: expected field:index[:value], got \"7\""},
      {"0 x:3:1", DataFileFormat::kLibffm,
       "field feature 1: expected a field number below 65535, got "
       "\"x:3:1\""},
      {"0 65535:3", DataFileFormat::kLibffm,
       "field feature 1: expected a field number below 65535, got "
       "\"65535:3\""},
      {"0 2:", DataFileFormat::kLibffm,
       "field feature 1: expected an index, got \"\""},
  };
  for (const Case& c : cases) {
    Parsed p;
    p.signs = {7};
    p.slots = {7};
    p.status = ParseLine(c.line, Format(c.format), &p.label, &p.signs, &p.slots,
                         &p.dense);
    EXPECT_TRUE(absl::IsInvalidArgument(p.status)) << c.line;
    EXPECT_EQ(p.status.message(), c.message) << c.line;
    EXPECT_EQ(p.signs, (std::vector<uint64_t>{7})) << c.line;
    EXPECT_EQ(p.slots, (std::vector<uint16_t>{7})) << c.line;
  }
}

}  // namespace
}  // namespace sampan

namespace sampan {
namespace {

absl::Status ParseText(std::string_view line, std::vector<uint64_t>* signs) {
  ParseOptions o;
  o.format = DataFileFormat::kText;
  float label = 1;
  std::vector<uint16_t> slots;
  std::vector<float> dense;
  const absl::Status s = ParseLine(line, o, &label, signs, &slots, &dense);
  EXPECT_EQ(slots.size(), signs->size());
  if (s.ok()) {
    EXPECT_EQ(label, 0);
  }
  return s;
}

TEST(TextFormatTest, TokensAreSignsOfSlotOne) {
  std::vector<uint64_t> signs;
  ASSERT_TRUE(ParseText("  the cat\tsat\r", &signs).ok());
  ASSERT_EQ(signs.size(), 3u);
  EXPECT_EQ(signs[0], FeatureSign(kTextSlot, "the"));
  EXPECT_EQ(signs[2], FeatureSign(kTextSlot, "sat"));
  signs.clear();
  EXPECT_TRUE(ParseText("", &signs).ok()) << "an empty line is no error";
  EXPECT_TRUE(signs.empty());
  EXPECT_TRUE(ParseText("caf\xc3\xa9 \xe2\x82\xac", &signs).ok());
  EXPECT_EQ(FieldsOf(DataFileFormat::kText), 1);
}

TEST(TextFormatTest, RefusesInvalidUtf8AndOverlongLines) {
  std::vector<uint64_t> signs = {7};
  for (const std::string& bad :
       {std::string("ok \xff no"), std::string("cut \xc3"),
        std::string("overlong \xc0\xaf"), std::string("surrogate \xed\xa0\x80"),
        std::string("big \xf4\x90\x80\x80"), std::string("nul \0 x", 7)}) {
    const absl::Status s = ParseText(bad, &signs);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("not valid UTF-8 (or a NUL) at byte"),
              std::string::npos)
        << s;
    EXPECT_EQ(signs.size(), 1u) << "unchanged on error";
  }
  std::string line;
  for (size_t i = 0; i <= kMaxTextTokens; ++i) line += "w ";
  const absl::Status s = ParseText(line, &signs);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("100001 tokens on one line"), std::string::npos)
      << s;
  EXPECT_EQ(signs.size(), 1u);
}

}  // namespace
}  // namespace sampan
