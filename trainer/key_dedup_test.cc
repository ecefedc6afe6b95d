#include "trainer/key_dedup.h"

#include "gtest/gtest.h"

namespace sampan {
namespace {

TEST(KeyDedupTest, FirstOccurrenceOrderAcrossBatches) {
  KeyDedup d;
  d.Reset(4);
  EXPECT_EQ(d.Index(7), 0u);
  EXPECT_EQ(d.Index(9), 1u);
  EXPECT_EQ(d.Index(7), 0u);
  EXPECT_EQ(d.Index(0), 2u);  // key 0 is an ordinary key
  EXPECT_EQ(d.keys(), (std::vector<uint64_t>{7, 9, 0}));
  // A new batch forgets the old keys, also after the table grows.
  d.Reset(1000);
  EXPECT_EQ(d.Index(9), 0u);
  for (uint64_t k = 100; k < 1099; ++k) EXPECT_EQ(d.Index(k), k - 99);
  EXPECT_EQ(d.Index(9), 0u);
  EXPECT_EQ(d.keys().size(), 1000u);
  d.Reset(2);
  EXPECT_EQ(d.Index(500), 0u);
  EXPECT_EQ(d.keys().size(), 1u);
}

}  // namespace
}  // namespace sampan
