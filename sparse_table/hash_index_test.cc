#include "sparse_table/hash_index.h"

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

}  // namespace
}  // namespace sampan
