#include "common/hash.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sampan {
namespace {

// Pins computed by an independent Python implementation of the definition in
// hash.h. These values are persisted in every table and checkpoint: if this
// test fails, the change breaks every model ever trained. Do not update the
// pins.
TEST(FeatureSignTest, PinnedValuesNeverChange) {
  EXPECT_EQ(FeatureSign(0, ""), 0xefd01f60ba992926ULL);
  EXPECT_EQ(FeatureSign(14, "68fd1e64"), 0x524fccfc62c6125eULL);
  EXPECT_EQ(FeatureSign(1, "b5"), 0x60f64699ec294c6bULL);
}

TEST(FeatureSignTest, SlotSeparatesEqualValues) {
  EXPECT_NE(FeatureSign(14, "68fd1e64"), FeatureSign(15, "68fd1e64"));
  EXPECT_NE(FeatureSign(1, ""), FeatureSign(2, ""));
}

TEST(ShardOfTest, PinnedAndInRange) {
  EXPECT_EQ(ShardOf(0x123456789abcdefULL, 1024), 300u);
  for (uint64_t k = 0; k < 1000; ++k) EXPECT_LT(ShardOf(k, 7), 7u);
}

TEST(ShardOfTest, SequentialSignsSpreadEvenly) {
  // Consecutive integers are the worst case for a plain modulo.
  constexpr int kShards = 64, kKeys = 64000;
  std::vector<int> count(kShards);
  for (uint64_t k = 0; k < kKeys; ++k) ++count[ShardOf(k, kShards)];
  for (int c : count) {
    EXPECT_GT(c, 800);
    EXPECT_LT(c, 1200);
  }
}

TEST(FeatureSignTest, NoCollisionsAmongManyValues) {
  std::set<uint64_t> seen;
  for (uint32_t slot = 0; slot < 40; ++slot)
    for (int v = 0; v < 5000; ++v)
      seen.insert(FeatureSign(slot, std::to_string(v)));
  EXPECT_EQ(seen.size(), 40u * 5000u);
}

}  // namespace
}  // namespace sampan
