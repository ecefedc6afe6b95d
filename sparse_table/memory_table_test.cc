#include <cmath>
#include <thread>
#include <vector>

#include "common/hash.h"
#include "gtest/gtest.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

absl::StatusOr<PushResult> PushRows(SparseTable& table,
                                    absl::Span<const uint64_t> keys,
                                    const float* grads, const float* shows,
                                    const float* clicks, uint64_t writer = 0,
                                    uint64_t sequence = 0) {
  PushBatch batch;
  batch.keys = keys;
  batch.grads = grads;
  batch.shows = shows;
  batch.clicks = clicks;
  batch.writer_id = writer;
  batch.sequence = sequence;
  return table.Push(batch);
}

TableOptions SmallOptions(OptimizerRule rule, uint32_t dim) {
  TableOptions o;
  o.num_shards = 4;
  o.embedding_dim = dim;
  o.rule = rule;
  o.learning_rate = 0.5f;
  o.initial_accumulator = 1.0f;
  o.embedding_initial_accumulator = 1.0f;
  o.init_range = 0.1f;
  return o;
}

TEST(MemoryTableTest, EvalPullOfUnknownKeyIsZeroAndCreatesNothing) {
  auto table = NewMemoryTable(SmallOptions(OptimizerRule::kAdagrad, 3));
  ASSERT_EQ(table->pull_dim(), 4u);
  std::vector<float> out(8, 7.0f);
  const uint64_t keys[] = {11, 12};
  ASSERT_TRUE(table->Pull(keys, /*is_training=*/false, out.data()).ok());
  for (float v : out) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(table->Stats().rows, 0u);
}

TEST(MemoryTableTest, TrainingPullCreatesDeterministicRows) {
  auto a = NewMemoryTable(SmallOptions(OptimizerRule::kAdagrad, 3));
  auto b = NewMemoryTable(SmallOptions(OptimizerRule::kAdagrad, 3));
  const uint64_t keys[] = {5, 6};
  std::vector<float> ra(8), rb(8);
  ASSERT_TRUE(a->Pull(keys, true, ra.data()).ok());
  ASSERT_TRUE(b->Pull(keys, true, rb.data()).ok());
  EXPECT_EQ(ra, rb);
  EXPECT_EQ(ra[0], 0.0f);  // w starts at zero
  for (int j = 1; j < 4; ++j) EXPECT_LE(std::abs(ra[j]), 0.1f);
  EXPECT_NE(ra[1], ra[5]);  // different keys, different embeddings
  EXPECT_EQ(a->Stats().rows, 2u);
}

TEST(MemoryTableTest, SgdArithmetic) {
  auto table = NewMemoryTable(SmallOptions(OptimizerRule::kSgd, 2));
  const uint64_t key[] = {42};
  std::vector<float> before(3), after(3);
  ASSERT_TRUE(table->Pull(key, true, before.data()).ok());
  const float grad[] = {1.0f, 0.2f, -0.4f}, show = 1, click = 0;
  ASSERT_TRUE(PushRows(*table, key, grad, &show, &click).ok());
  ASSERT_TRUE(table->Pull(key, true, after.data()).ok());
  EXPECT_FLOAT_EQ(after[0], before[0] - 0.5f * 1.0f);
  EXPECT_FLOAT_EQ(after[1], before[1] - 0.5f * 0.2f);
  EXPECT_FLOAT_EQ(after[2], before[2] + 0.5f * 0.4f);
}

TEST(MemoryTableTest, AdagradArithmetic) {
  auto table = NewMemoryTable(SmallOptions(OptimizerRule::kAdagrad, 2));
  const uint64_t key[] = {42};
  std::vector<float> before(3), after(3);
  ASSERT_TRUE(table->Pull(key, true, before.data()).ok());
  const float grad[] = {2.0f, 3.0f, 1.0f}, show = 1, click = 1;
  ASSERT_TRUE(PushRows(*table, key, grad, &show, &click).ok());
  ASSERT_TRUE(table->Pull(key, true, after.data()).ok());
  // w: g2 = 1 + 4 = 5.  v: g2 = 1 + (9 + 1) / 2 = 6 (one sum per embedding).
  EXPECT_FLOAT_EQ(after[0], before[0] - 0.5f * 2.0f / std::sqrt(5.0f));
  EXPECT_FLOAT_EQ(after[1], before[1] - 0.5f * 3.0f / std::sqrt(6.0f));
  EXPECT_FLOAT_EQ(after[2], before[2] - 0.5f * 1.0f / std::sqrt(6.0f));
  // A second push sees the accumulated sums: w g2 = 5 + 4 = 9.
  ASSERT_TRUE(PushRows(*table, key, grad, &show, &click).ok());
  std::vector<float> again(3);
  ASSERT_TRUE(table->Pull(key, true, again.data()).ok());
  EXPECT_FLOAT_EQ(again[0], after[0] - 0.5f * 2.0f / 3.0f);
}

TEST(MemoryTableTest, LogisticRegressionTableHasNoEmbedding) {
  auto table = NewMemoryTable(SmallOptions(OptimizerRule::kSgd, 0));
  EXPECT_EQ(table->pull_dim(), 1u);
  const uint64_t key[] = {1};
  const float grad[] = {-1.0f}, show = 1, click = 1;
  ASSERT_TRUE(PushRows(*table, key, grad, &show, &click).ok());
  float w = 0;
  ASSERT_TRUE(table->Pull(key, false, &w).ok());
  EXPECT_FLOAT_EQ(w, 0.5f);
}

TEST(MemoryTableTest, NonFiniteGradientIsRejectedAndChangesNothing) {
  auto table = NewMemoryTable(SmallOptions(OptimizerRule::kSgd, 1));
  const uint64_t keys[] = {1, 2};
  const float grads[] = {1.0f, 1.0f, NAN, 0.0f}, shows[] = {1, 1},
              clicks[] = {0, 0};
  absl::Status s = PushRows(*table, keys, grads, shows, clicks).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(table->Stats().rows, 0u);
}

TEST(MemoryTableTest, ConcurrentPushesAllLand) {
  auto table = NewMemoryTable(SmallOptions(OptimizerRule::kSgd, 0));
  constexpr int kThreads = 4, kRounds = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      std::vector<uint64_t> keys(64);
      std::vector<float> grads(64, -0.002f), ones(64, 1.0f), zeros(64, 0.0f);
      for (int i = 0; i < 64; ++i) keys[i] = i;
      for (int r = 0; r < kRounds; ++r) {
        ASSERT_TRUE(
            PushRows(*table, keys, grads.data(), ones.data(), zeros.data())
                .ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<uint64_t> keys(64);
  for (int i = 0; i < 64; ++i) keys[i] = i;
  std::vector<float> w(64);
  ASSERT_TRUE(table->Pull(keys, false, w.data()).ok());
  // Every one of the 2,000 pushes adds 0.5 * 0.002 = 0.001 to each weight.
  for (float v : w) EXPECT_NEAR(v, 2.0f, 1e-3f);
}

TEST(MemoryTableTest, ReplayedSequenceIsAppliedOnce) {
  auto table = NewMemoryTable(SmallOptions(OptimizerRule::kSgd, 0));
  std::vector<uint64_t> keys(50);
  for (int i = 0; i < 50; ++i) keys[i] = 1000 + i;  // spans all 4 shards
  std::vector<float> grads(50, -1.0f), ones(50, 1.0f), zeros(50, 0.0f);
  auto push = [&](uint64_t writer, uint64_t seq) {
    auto r = PushRows(*table, keys, grads.data(), ones.data(), zeros.data(),
                      writer, seq);
    EXPECT_TRUE(r.ok());
    return *r;
  };
  EXPECT_EQ(push(7, 1).applied_keys, 50u);
  PushResult replay = push(7, 1);
  EXPECT_EQ(replay.applied_keys, 0u);
  EXPECT_EQ(replay.duplicate_keys, 50u);
  EXPECT_EQ(push(7, 2).applied_keys, 50u);
  EXPECT_EQ(push(8, 1).applied_keys, 50u);  // another writer, own sequence
  EXPECT_EQ(push(7, 0).applied_keys, 50u);  // untracked: always applied
  std::vector<float> w(50);
  ASSERT_TRUE(table->Pull(keys, false, w.data()).ok());
  for (float v : w) EXPECT_FLOAT_EQ(v, 4 * 0.5f);  // 4 applied pushes
}

TEST(MemoryTableTest, CountFilterAdmitsOnTheNthPush) {
  TableOptions o = SmallOptions(OptimizerRule::kSgd, 2);
  o.admit_after_pushes = 3;
  auto table = NewMemoryTable(o);
  const uint64_t key[] = {77};
  const float grad[] = {-1, -1, -1}, show = 1, click = 0;
  std::vector<float> out(3, 9.0f);
  for (int push = 1; push <= 2; ++push) {
    auto r = PushRows(*table, key, grad, &show, &click);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->unadmitted_keys, 1u);
    ASSERT_TRUE(table->Pull(key, /*is_training=*/true, out.data()).ok());
    EXPECT_EQ(out, std::vector<float>(3, 0.0f));  // not admitted: zeros
    EXPECT_EQ(table->Stats().rows, 0u);
  }
  auto r = PushRows(*table, key, grad, &show, &click);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->applied_keys, 1u);
  ASSERT_TRUE(table->Pull(key, false, out.data()).ok());
  EXPECT_FLOAT_EQ(out[0], 0.5f);  // only the admitting push was applied
  EXPECT_EQ(table->Stats().rows, 1u);
  EXPECT_EQ(table->Stats().unadmitted_keys, 2u);
}

TEST(MemoryTableTest, ProbabilityFilterAdmitsAboutThatFraction) {
  TableOptions o = SmallOptions(OptimizerRule::kSgd, 0);
  o.admit_probability = 0.25f;
  auto table = NewMemoryTable(o);
  std::vector<uint64_t> keys(4000);
  for (int i = 0; i < 4000; ++i) keys[i] = i;
  std::vector<float> grads(4000, 1), ones(4000, 1), zeros(4000, 0);
  auto r = PushRows(*table, keys, grads.data(), ones.data(), zeros.data());
  ASSERT_TRUE(r.ok());
  // Binomial(4000, 0.25): mean 1000, sd 27; the seed is fixed.
  EXPECT_NEAR(static_cast<double>(r->applied_keys), 1000, 150);
  EXPECT_EQ(r->applied_keys + r->unadmitted_keys, 4000u);
  EXPECT_EQ(table->Stats().rows, r->applied_keys);
}

TEST(MemoryTableTest, SkipKeyPolicyAppliesTheFiniteKeysAndCounts) {
  TableOptions o = SmallOptions(OptimizerRule::kSgd, 0);
  o.non_finite = NonFinitePolicy::kSkipKey;
  auto table = NewMemoryTable(o);
  const uint64_t keys[] = {1, 2, 3};
  const float grads[] = {-1, INFINITY, -1}, shows[] = {1, 1, NAN},
              clicks[] = {0, 0, 0};
  auto r = PushRows(*table, keys, grads, shows, clicks);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->applied_keys, 1u);
  EXPECT_EQ(r->rejected_keys, 2u);
  EXPECT_EQ(table->Stats().rejected_keys, 2u);
  std::vector<float> w(3);
  ASSERT_TRUE(table->Pull(keys, false, w.data()).ok());
  EXPECT_EQ(w, (std::vector<float>{0.5f, 0, 0}));
}

TEST(MemoryTableTest, ShrinkDeletesByScore) {
  TableOptions o = SmallOptions(OptimizerRule::kSgd, 0);
  o.delete_threshold = 0.15f;
  o.show_decay_rate = 0.9f;
  auto table = NewMemoryTable(o);
  std::vector<uint64_t> keys(20);
  for (int i = 0; i < 20; ++i) keys[i] = i;
  std::vector<float> grads(20, 1), shows(20, 1), clicks(20, 0);
  for (int i = 0; i < 5; ++i) shows[i] = 2;  // score 0.18 after decay
  ASSERT_TRUE(
      PushRows(*table, keys, grads.data(), shows.data(), clicks.data()).ok());
  auto shrunk = table->Shrink();
  ASSERT_TRUE(shrunk.ok());
  EXPECT_EQ(shrunk->deleted_rows, 15u);
  EXPECT_EQ(shrunk->rows, 5u);
  EXPECT_EQ(table->Stats().rows, 5u);
  // Freed slots are reused by new rows.
  const uint64_t fresh[] = {100};
  ASSERT_TRUE(
      PushRows(*table, fresh, grads.data(), shows.data(), clicks.data()).ok());
  EXPECT_EQ(table->Stats().rows, 6u);
}

TEST(MemoryTableTest, DuplicateKeysInOnePushAccumulate) {
  auto table = NewMemoryTable(SmallOptions(OptimizerRule::kSgd, 0));
  const uint64_t keys[] = {5, 5};
  const float grads[] = {-1, -1}, shows[] = {1, 1}, clicks[] = {0, 0};
  ASSERT_TRUE(PushRows(*table, keys, grads, shows, clicks).ok());
  float w = 0;
  ASSERT_TRUE(table->Pull(absl::MakeConstSpan(keys, 1), false, &w).ok());
  EXPECT_FLOAT_EQ(w, 1.0f);
}

namespace positions_test {

// Pushes the same gradients for `keys` to both tables (`with` through
// `positions`, `without` looking every key up) and checks both read the
// same afterwards.
void PushBoth(SparseTable& with, SparseTable& without,
              const std::vector<uint64_t>& keys, float scale,
              const PullPositions* positions) {
  const uint32_t pd = with.pull_dim();
  std::vector<float> grads(keys.size() * pd), shows(keys.size(), 1),
      clicks(keys.size(), 0);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = scale * (i % 7 + 1);
  PushBatch push;
  push.keys = keys;
  push.grads = grads.data();
  push.shows = shows.data();
  push.clicks = clicks.data();
  push.positions = positions;
  ASSERT_TRUE(with.Push(push).ok());
  push.positions = nullptr;
  ASSERT_TRUE(without.Push(push).ok());
  std::vector<float> a(keys.size() * pd), b(keys.size() * pd);
  ASSERT_TRUE(with.Pull(keys, false, a.data()).ok());
  ASSERT_TRUE(without.Pull(keys, false, b.data()).ok());
  EXPECT_EQ(a, b);
}

// Pulls `keys` (training) from both tables, `with` recording positions,
// then PushBoth through those positions (or `stale` ones when given).
void PullPushBoth(SparseTable& with, SparseTable& without,
                  const std::vector<uint64_t>& keys, float scale,
                  const PullPositions* stale = nullptr) {
  const uint32_t pd = with.pull_dim();
  std::vector<float> a(keys.size() * pd), b(keys.size() * pd);
  PullPositions positions;
  ASSERT_TRUE(with.Pull(keys, true, a.data(), &positions).ok());
  ASSERT_TRUE(without.Pull(keys, true, b.data()).ok());
  ASSERT_EQ(a, b);
  PushBoth(with, without, keys, scale, stale != nullptr ? stale : &positions);
}

std::vector<uint64_t> Keys(uint64_t from, uint64_t n) {
  std::vector<uint64_t> k;
  for (uint64_t i = 0; i < n; ++i) k.push_back(from + i * 7919);
  return k;
}

TEST(PullPositionsTest, APushThroughPositionsAppliesAsOneWithout) {
  auto with = NewMemoryTable(SmallOptions(OptimizerRule::kAdagrad, 3));
  auto without = NewMemoryTable(SmallOptions(OptimizerRule::kAdagrad, 3));
  for (int round = 0; round < 5; ++round) {
    // Half the keys known, half new each round; one key twice.
    std::vector<uint64_t> keys = Keys(round * 50, 100);
    keys.push_back(keys[3]);
    PullPushBoth(*with, *without, keys, 0.01f * (round + 1));
  }
}

// After Shrink frees rows, positions taken before it point at dead slots
// (some then reused by other keys): the push must find the keys anew, not
// write into the dead rows, which would lose the update.
TEST(PullPositionsTest, PositionsFromBeforeAShrinkAreNotTrusted) {
  TableOptions o = SmallOptions(OptimizerRule::kSgd, 2);
  o.delete_threshold = 0.15f;
  o.show_decay_rate = 0.9f;
  auto with = NewMemoryTable(o);
  auto without = NewMemoryTable(o);
  const std::vector<uint64_t> keys = Keys(1, 40);
  std::vector<float> rows(keys.size() * with->pull_dim());
  PullPositions before;
  ASSERT_TRUE(with->Pull(keys, true, rows.data(), &before).ok());
  ASSERT_TRUE(without->Pull(keys, true, rows.data()).ok());
  // Rows never pushed score 0 < 0.15: Shrink deletes them all.
  ASSERT_EQ(with->Shrink()->deleted_rows, keys.size());
  ASSERT_EQ(without->Shrink()->deleted_rows, keys.size());
  // Other keys take some of the freed slots; the rest are dead but still
  // name their old keys, so only the shard's epoch tells them apart.
  PullPushBoth(*with, *without, Keys(100000, 10), 0.5f);
  PushBoth(*with, *without, keys, 0.25f, &before);
  PullPushBoth(*with, *without, keys, 0.25f, &before);
  EXPECT_EQ(with->Stats().rows, without->Stats().rows);
}

// Another table's positions for the same keys may match this table's
// epochs and freed slots; they must not be taken.
TEST(PullPositionsTest, PositionsOfAnotherTableAreIgnored) {
  TableOptions o = SmallOptions(OptimizerRule::kSgd, 2);
  o.delete_threshold = 0.15f;
  auto other = NewMemoryTable(o);
  auto with = NewMemoryTable(o);
  auto without = NewMemoryTable(o);
  const std::vector<uint64_t> keys = Keys(11, 40);
  std::vector<float> rows(keys.size() * with->pull_dim());
  for (SparseTable* t : {with.get(), without.get()}) {
    ASSERT_TRUE(t->Pull(keys, true, rows.data()).ok());
    // Leaves dead slots that keep their keys.
    ASSERT_EQ(t->Shrink()->deleted_rows, keys.size());
  }
  // `other` gives the keys the same slots and its shards the same epochs
  // (one removal per key in each shard): pushed keys survive its Shrink,
  // as many extra keys of the same shards, pulled after them, do not.
  std::vector<uint64_t> extra;
  for (uint64_t key : keys) {
    uint64_t e = key + 1000003;
    while (ShardOf(e, o.num_shards) != ShardOf(key, o.num_shards)) ++e;
    extra.push_back(e);
  }
  ASSERT_TRUE(other->Pull(keys, true, rows.data()).ok());
  ASSERT_TRUE(other->Pull(extra, true, rows.data()).ok());
  std::vector<float> ones(rows.size(), 1.0f);
  ASSERT_TRUE(
      PushRows(*other, keys, ones.data(), ones.data(), ones.data()).ok());
  ASSERT_EQ(other->Shrink()->deleted_rows, extra.size());
  PullPositions foreign;
  ASSERT_TRUE(other->Pull(keys, true, rows.data(), &foreign).ok());
  PushBoth(*with, *without, keys, 0.5f, &foreign);
  EXPECT_EQ(with->Stats().rows, keys.size());
}

TEST(PullPositionsTest, PositionsOfOtherKeysAreIgnored) {
  auto with = NewMemoryTable(SmallOptions(OptimizerRule::kAdagrad, 3));
  auto without = NewMemoryTable(SmallOptions(OptimizerRule::kAdagrad, 3));
  const std::vector<uint64_t> other = Keys(5, 64);
  std::vector<float> rows(other.size() * with->pull_dim());
  PullPositions foreign;
  ASSERT_TRUE(with->Pull(other, true, rows.data(), &foreign).ok());
  ASSERT_TRUE(without->Pull(other, true, rows.data()).ok());
  PullPushBoth(*with, *without, Keys(3, 64), 0.1f, &foreign);
  // The same keys in another order are other keys too.
  std::vector<uint64_t> reversed(other.rbegin(), other.rend());
  PullPushBoth(*with, *without, reversed, 0.2f, &foreign);
  std::vector<float> a(rows.size()), b(rows.size());
  ASSERT_TRUE(with->Pull(other, false, a.data()).ok());
  ASSERT_TRUE(without->Pull(other, false, b.data()).ok());
  EXPECT_EQ(a, b);
}

}  // namespace positions_test

}  // namespace
}  // namespace sampan
