#include "trainer/client/push_queue.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

// Rows of dim 2: key k carries gradient (k, 10k), show 1, click k % 2.
struct Rows {
  explicit Rows(std::vector<uint64_t> k) : keys(std::move(k)) {
    for (size_t i = 0; i < keys.size(); ++i) {
      grads.push_back(float(keys[i]));
      grads.push_back(10.0f * keys[i]);
      shows.push_back(1);
      clicks.push_back(float(keys[i] % 2));
      positions.push_back(uint32_t(i));
    }
  }
  std::vector<uint64_t> keys;
  std::vector<float> grads, shows, clicks;
  std::vector<uint32_t> positions;
};

// The rows of `r`, dim 2, appended to or merged into `m`.
void Append(MergedPush& m, const Rows& r) {
  m.Append(r.keys, r.grads.data(), r.shows.data(), r.clicks.data(), r.positions,
           2);
}
void Merge(MergedPush& m, const Rows& r) {
  m.Merge(r.keys, r.grads.data(), r.shows.data(), r.clicks.data(), r.positions,
          2);
}

// Sums per key over the merged entries (a key may have more than one).
struct Totals {
  float g0 = 0, g1 = 0, show = 0, click = 0;
};
absl::flat_hash_map<uint64_t, Totals> Sum(const MergedPush& m) {
  absl::flat_hash_map<uint64_t, Totals> t;
  for (size_t i = 0; i < m.size(); ++i) {
    Totals& s = t[m.keys[i]];
    s.g0 += m.grads[2 * i];
    s.g1 += m.grads[2 * i + 1];
    s.show += m.shows[i];
    s.click += m.clicks[i];
  }
  return t;
}

TEST(MergedPushTest, FirstBatchIsAppendedLaterOnesMergeIntoIt) {
  MergedPush m;
  Rows a({1, 2, 3}), b({3, 4, 1, 3});
  Append(m, a);
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(m.index.size(), 0u);  // nothing looked up for a lone batch
  Merge(m, b);
  EXPECT_EQ(m.size(), 4u);  // 1, 2, 3 merged; 4 appended
  auto t = Sum(m);
  EXPECT_EQ(t[3].g0, 9.0f);  // 3 three times
  EXPECT_EQ(t[3].g1, 90.0f);
  EXPECT_EQ(t[3].show, 3.0f);
  EXPECT_EQ(t[3].click, 3.0f);
  EXPECT_EQ(t[1].g0, 2.0f);
  EXPECT_EQ(t[4].g0, 4.0f);
  EXPECT_EQ(t[2].show, 1.0f);
}

TEST(MergedPushTest, ADuplicateInTheAppendedBatchIsKeptNotLost) {
  MergedPush m;
  Rows a({7, 7}), b({7});
  Append(m, a);
  Merge(m, b);
  EXPECT_EQ(m.size(), 2u);  // the pserver sums the two entries
  EXPECT_EQ(Sum(m)[7].g0, 21.0f);
  EXPECT_EQ(Sum(m)[7].show, 3.0f);
}

TEST(MergedPushTest, ClearEmptiesAndTheNextBatchAppendsAgain) {
  MergedPush m;
  Rows a({1, 2}), b({2});
  Append(m, a);
  Merge(m, b);
  m.Clear();
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.indexed, 0u);
  Append(m, b);
  Merge(m, a);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(Sum(m)[2].g0, 4.0f);
}

}  // namespace
}  // namespace sampan
