#include "trainer/key_dedup.h"

#include "gtest/gtest.h"
#include "trainer/batch_keys.h"

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

// Batches bigger than the last one grow the table mid-batch; rows keep
// their first-occurrence order and every key keeps its row.
TEST(KeyDedupTest, GrowsPastThePreviousBatch) {
  KeyDedup d;
  d.Reset(10);
  for (uint64_t k = 0; k < 10; ++k) d.Index(k);
  d.Reset(100000);
  for (uint64_t k = 0; k < 50000; ++k) {
    d.Prefetch(k * 7919);
    ASSERT_EQ(d.Index(k * 7919), k);
  }
  for (uint64_t k = 0; k < 50000; ++k) ASSERT_EQ(d.Index(k * 7919), k);
  std::vector<uint64_t> keys;
  d.TakeKeys(&keys);
  ASSERT_EQ(keys.size(), 50000u);
  EXPECT_EQ(keys[49999], 49999u * 7919);
  d.Reset(3);
  EXPECT_EQ(d.Index(5), 0u);
  EXPECT_EQ(d.Index(6), 1u);
  EXPECT_EQ(d.keys(), (std::vector<uint64_t>{5, 6}));
}

// The one-pass DedupAndCount gives what Dedup then CountShowsAndClicks do.
TEST(BatchKeysTest, DedupAndCountMatchesTwoPasses) {
  Batch batch;
  batch.Clear();
  const std::vector<std::vector<uint64_t>> ex = {{5, 6, 5}, {7}, {}, {6, 8}};
  for (size_t i = 0; i < ex.size(); ++i) {
    batch.signs.insert(batch.signs.end(), ex[i].begin(), ex[i].end());
    batch.offsets.push_back(batch.signs.size());
    batch.labels.push_back(i % 2 == 0 ? 1.0f : 0.0f);
  }
  BatchKeys two, one;
  two.Dedup(batch);
  two.CountShowsAndClicks(batch);
  one.DedupAndCount(batch);
  EXPECT_EQ(one.keys, (std::vector<uint64_t>{kBiasSign, 5, 6, 7, 8}));
  EXPECT_EQ(one.keys, two.keys);
  EXPECT_EQ(one.row_of_sign, two.row_of_sign);
  EXPECT_EQ(one.shows, (std::vector<float>{4, 2, 2, 1, 1}));
  EXPECT_EQ(one.clicks, (std::vector<float>{2, 2, 1, 0, 0}));
  EXPECT_EQ(one.shows, two.shows);
  EXPECT_EQ(one.clicks, two.clicks);
}

}  // namespace
}  // namespace sampan
