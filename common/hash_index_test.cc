#include "common/hash_index.h"

#include <random>

#include "absl/container/flat_hash_map.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

// Random inserts and erases against absl::flat_hash_map as the model.
TEST(HashIndexTest, MatchesAReferenceMapUnderChurn) {
  SlotKeys keys;
  HashIndex index(&keys);
  absl::flat_hash_map<uint64_t, uint32_t> model;
  std::vector<uint32_t> free_slots;
  std::mt19937_64 rng(1);
  for (int op = 0; op < 200000; ++op) {
    const uint64_t key = rng() % 5000;  // small range: many collisions/erases
    auto it = model.find(key);
    ASSERT_EQ(index.Find(key),
              it == model.end() ? HashIndex::kEmpty : it->second);
    if (it == model.end()) {
      uint32_t slot;
      if (!free_slots.empty()) {
        slot = free_slots.back();
        free_slots.pop_back();
        keys[slot] = key;
      } else {
        slot = keys.size();
        keys.push_back(key);
      }
      index.Insert(key, slot);
      model[key] = slot;
    } else if (rng() % 2 == 0) {
      index.Erase(key);
      free_slots.push_back(it->second);
      model.erase(it);
    }
    ASSERT_EQ(index.size(), model.size());
  }
  for (const auto& [key, slot] : model) EXPECT_EQ(index.Find(key), slot);
  // 4-byte buckets at 57-85% load.
  EXPECT_LE(index.bytes(), model.size() * 4 * 100 / 50);
}

// Over a plain vector, as the client's push queue uses it: a reserved index
// takes its entries without growing, a cleared one keeps its buckets, and a
// rebound one probes the new array.
TEST(HashIndexTest, OverAVectorReservesClearsAndRebinds) {
  std::vector<uint64_t> keys;
  HashIndexOver<std::vector<uint64_t>> index(&keys);
  index.Reserve(1000);
  const size_t reserved = index.bytes();
  EXPECT_GE(reserved, 1000 * 4u);
  for (uint64_t k = 0; k < 1000; ++k) {
    keys.push_back(k * 7919);
    index.Insert(keys.back(), uint32_t(k));
  }
  EXPECT_EQ(index.bytes(), reserved);
  EXPECT_EQ(index.Find(7919 * 500), 500u);
  EXPECT_EQ(index.Find(3), decltype(index)::kEmpty);
  index.Clear();
  EXPECT_EQ(index.Find(0), decltype(index)::kEmpty);
  EXPECT_EQ(index.bytes(), reserved);
  std::vector<uint64_t> other = {42, 43};
  index.Rebind(&other);
  index.Insert(43, 1);
  EXPECT_EQ(index.Find(43), 1u);
  EXPECT_EQ(index.Find(42), decltype(index)::kEmpty);
}

}  // namespace
}  // namespace sampan
