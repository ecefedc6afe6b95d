#include "common/pass_pattern.h"

#include "gtest/gtest.h"

namespace sampan {
namespace {

TEST(PassPatternTest, DayHourDirectories) {
  absl::StatusOr<PassPattern> p = PassPattern::Compile("%Y%m%d/%H");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->depth(), 2);
  std::optional<PassTime> t = p->Match("20261201/05");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->time, absl::CivilMinute(2026, 12, 1, 5, 0));
  EXPECT_EQ(t->day, "20261201");
  EXPECT_LT(p->Match("20261130/23")->time, t->time);
}

TEST(PassPatternTest, RejectsWhatIsNotATime) {
  PassPattern p = *PassPattern::Compile("%Y%m%d/%H");
  EXPECT_FALSE(p.Match("20261201/5").has_value());     // one digit
  EXPECT_FALSE(p.Match("20261201/24").has_value());    // hour 24
  EXPECT_FALSE(p.Match("20261301/05").has_value());    // month 13
  EXPECT_FALSE(p.Match("20260230/05").has_value());    // February 30
  EXPECT_FALSE(p.Match("20261201/05/x").has_value());  // deeper
  EXPECT_FALSE(p.Match("20261201_05").has_value());
  EXPECT_FALSE(p.Match("").has_value());
}

TEST(PassPatternTest, LiteralsAndMinutes) {
  absl::StatusOr<PassPattern> p =
      PassPattern::Compile("day=%Y-%m-%d/hour=%H%M%%");
  ASSERT_TRUE(p.ok()) << p.status();
  std::optional<PassTime> t = p->Match("day=2026-12-01/hour=0530%");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->time, absl::CivilMinute(2026, 12, 1, 5, 30));
  EXPECT_FALSE(p->Match("day=2026-12-01/hour=0530").has_value());
}

TEST(PassPatternTest, BadPatterns) {
  EXPECT_FALSE(PassPattern::Compile("%H").ok());           // no day
  EXPECT_FALSE(PassPattern::Compile("%Y%m%d/%H%H").ok());  // twice
  EXPECT_FALSE(PassPattern::Compile("%Y%m%d/%x").ok());    // unknown
  EXPECT_FALSE(PassPattern::Compile("%Y%m%d/%").ok());     // lone %
  EXPECT_FALSE(PassPattern::Compile("/%Y%m%d").ok());      // absolute
  EXPECT_FALSE(PassPattern::Compile("%Y%m%d//%H").ok());   // empty level
  absl::Status s = PassPattern::Compile("%Y%m%d/%q").status();
  EXPECT_NE(s.message().find("%q"), std::string::npos) << s;
}

}  // namespace
}  // namespace sampan
