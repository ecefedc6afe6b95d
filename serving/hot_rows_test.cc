// HotRows: rows found as inserted, the budget kept, CLOCK's second chance
// for rows read again, and the epochs that keep each View to its version.
#include "serving/hot_rows.h"

#include <vector>

#include "gtest/gtest.h"

namespace sampan {
namespace {

constexpr int kDim = 17;

std::vector<float> RowsOf(const std::vector<uint64_t>& keys, float scale) {
  std::vector<float> rows(keys.size() * kDim);
  for (size_t i = 0; i < keys.size(); ++i) {
    for (int j = 0; j < kDim; ++j) rows[i * kDim + j] = scale * (keys[i] + j);
  }
  return rows;
}

std::vector<uint32_t> All(size_t n) {
  std::vector<uint32_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = uint32_t(i);
  return idx;
}

void InsertAt(HotRows& hot, const std::vector<uint64_t>& keys, uint64_t epoch,
              float scale) {
  const std::vector<float> rows = RowsOf(keys, scale);
  const std::vector<uint8_t> found(keys.size(), 1);
  hot.Insert(keys, All(keys.size()), epoch, kDim, rows.data(), found.data());
}

// Which of `keys` Find answers at `epoch`; each answered row must be the one
// inserted with `scale`.
std::vector<bool> Hits(HotRows& hot, const std::vector<uint64_t>& keys,
                       uint64_t epoch, float scale) {
  std::vector<float> rows(keys.size() * kDim, -1.0f);
  std::vector<uint8_t> found(keys.size(), 7);
  std::vector<uint32_t> misses;
  hot.Find(keys, epoch, kDim, rows.data(), found.data(), &misses);
  const std::vector<float> want = RowsOf(keys, scale);
  std::vector<bool> hit(keys.size());
  size_t missed = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    hit[i] = found[i] == 1;
    EXPECT_TRUE(found[i] == 0 || found[i] == 1);
    for (int j = 0; j < kDim; ++j) {
      EXPECT_EQ(rows[i * kDim + j], hit[i] ? want[i * kDim + j] : 0.0f)
          << "key " << keys[i];
    }
    missed += !hit[i];
  }
  EXPECT_EQ(misses.size(), missed);
  return hit;
}

std::vector<uint64_t> Range(uint64_t from, uint64_t to) {
  std::vector<uint64_t> keys;
  for (uint64_t k = from; k < to; ++k) keys.push_back(k * 7919);
  return keys;
}

TEST(HotRows, FindsWhatWasInsertedWithinItsBudget) {
  HotRows hot(64 << 20);
  hot.Stamp(1);
  const std::vector<uint64_t> keys = Range(0, 1000);
  InsertAt(hot, keys, 1, 1.0f);
  for (bool hit : Hits(hot, keys, 1, 1.0f)) EXPECT_TRUE(hit);
  // Keys not found by the caller are not cached.
  const std::vector<uint64_t> absent = Range(1000, 1010);
  const std::vector<float> rows = RowsOf(absent, 1.0f);
  const std::vector<uint8_t> none(absent.size(), 0);
  hot.Insert(absent, All(absent.size()), 1, kDim, rows.data(), none.data());
  for (bool hit : Hits(hot, absent, 1, 1.0f)) EXPECT_FALSE(hit);
  // Rows of another width are not this width's.
  std::vector<float> wide(keys.size() * (kDim + 1));
  std::vector<uint8_t> found(keys.size());
  std::vector<uint32_t> misses;
  hot.Find(keys, 1, kDim + 1, wide.data(), found.data(), &misses);
  EXPECT_EQ(misses.size(), keys.size());
  const HotRows::Stats stats = hot.stats();
  EXPECT_EQ(stats.rows, 1000u);
  EXPECT_EQ(stats.hits, 1000u);
  EXPECT_EQ(stats.misses, 10u + keys.size());

  // A budget for ~5,000 rows: 200,000 inserts keep it.
  const uint64_t budget = 5000 * (kDim * 4 + 24);
  HotRows small(budget);
  small.Stamp(1);
  for (uint64_t at = 0; at < 200000; at += 1000) {
    InsertAt(small, Range(at, at + 1000), 1, 1.0f);
  }
  const HotRows::Stats s = small.stats();
  EXPECT_LE(s.bytes, budget + (16 << 10));
  EXPECT_GT(s.rows, 4000u);
  EXPECT_LE(s.rows, 5000u);
}

TEST(HotRows, RowsReadAgainOutliveRowsReadOnce) {
  const uint64_t budget = 1024 * (kDim * 4 + 24);  // one shard, 1024 rows
  HotRows hot(budget);
  hot.Stamp(1);
  const std::vector<uint64_t> first = Range(0, 1024);
  InsertAt(hot, first, 1, 1.0f);
  ASSERT_EQ(hot.stats().rows, 1024u);
  std::vector<uint64_t> reread(first.begin(), first.begin() + 512);
  Hits(hot, reread, 1, 1.0f);
  // 512 new rows take the places of the 512 not read again.
  InsertAt(hot, Range(5000, 5512), 1, 1.0f);
  for (bool hit : Hits(hot, reread, 1, 1.0f)) EXPECT_TRUE(hit);
  std::vector<uint64_t> once(first.begin() + 512, first.end());
  for (bool hit : Hits(hot, once, 1, 1.0f)) EXPECT_FALSE(hit);
}

TEST(HotRows, EachEpochSeesOnlyItsRows) {
  HotRows hot(64 << 20);
  const std::vector<uint64_t> keys = Range(0, 100);
  hot.Stamp(1);
  InsertAt(hot, keys, 1, 1.0f);
  // Epoch 2 begins: a View of epoch 1 may no longer insert.
  hot.Stamp(2);
  const std::vector<uint64_t> late = Range(100, 110);
  InsertAt(hot, late, 1, 1.0f);
  for (bool hit : Hits(hot, late, 1, 1.0f)) EXPECT_FALSE(hit);
  // Epoch 2 changed the first ten keys: forgotten, then read again by a
  // View of epoch 2 with their new rows.
  const std::vector<uint64_t> changed(keys.begin(), keys.begin() + 10);
  const std::vector<uint64_t> same(keys.begin() + 10, keys.end());
  hot.Forget(changed);
  for (bool hit : Hits(hot, changed, 1, 1.0f)) EXPECT_FALSE(hit);
  InsertAt(hot, changed, 2, 2.0f);
  // Epoch 1's View reads its own rows elsewhere; epoch 2's and later ones
  // get the new rows, and the unchanged ones of epoch 1.
  for (bool hit : Hits(hot, changed, 1, 1.0f)) EXPECT_FALSE(hit);
  for (bool hit : Hits(hot, changed, 2, 2.0f)) EXPECT_TRUE(hit);
  for (bool hit : Hits(hot, changed, 3, 2.0f)) EXPECT_TRUE(hit);
  for (bool hit : Hits(hot, same, 1, 1.0f)) EXPECT_TRUE(hit);
  for (bool hit : Hits(hot, same, 2, 1.0f)) EXPECT_TRUE(hit);
  // A new base: nothing left, memory freed.
  hot.Stamp(3);
  hot.Reset();
  for (bool hit : Hits(hot, keys, 3, 2.0f)) EXPECT_FALSE(hit);
  EXPECT_EQ(hot.stats().rows, 0u);
  EXPECT_LT(hot.stats().bytes, 1024u);
}

}  // namespace
}  // namespace sampan
