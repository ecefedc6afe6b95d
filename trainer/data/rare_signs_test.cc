#include "trainer/data/rare_signs.h"

#include "gtest/gtest.h"

namespace sampan {
namespace {

TEST(RareSignsTest, KeepsSignsSeenMinCountTimes) {
  RareSigns rare(3);
  rare.Count({10, 11, 10, 12});
  rare.Count({10, 11, 11, 13});
  rare.Freeze();
  EXPECT_EQ(rare.kept(), 2u);  // 10 and 11, three times each
  std::vector<uint64_t> signs = {10, 12, 11, 13, 99};
  const std::vector<uint16_t> slots = {1, 2, 3, 4, 4};
  rare.Apply(&signs, slots);
  EXPECT_EQ(signs, (std::vector<uint64_t>{10, RareSign(2), 11, RareSign(4),
                                          RareSign(4)}));
  EXPECT_NE(RareSign(2), RareSign(4));
}

}  // namespace
}  // namespace sampan
