#include "common/shard_map.h"

#include "gtest/gtest.h"

namespace sampan {
namespace {

TEST(ShardMapTest, InitialMapSpreadsShardsRoundRobin) {
  const ShardMap map = InitialShardMap(8, {"a:1", "b:2", "c:3"});
  EXPECT_EQ(map.version, 1u);
  EXPECT_EQ(map.num_shards(), 8u);
  EXPECT_EQ(map.num_pservers(), 3u);
  EXPECT_EQ(map.ShardsOf(0), (std::vector<uint32_t>{0, 3, 6}));
  EXPECT_EQ(map.ShardsOf(2), (std::vector<uint32_t>{2, 5}));
  EXPECT_TRUE(ValidateShardMap(map).ok());
  for (uint64_t key : {1ull, 77ull, 1ull << 40}) {
    EXPECT_EQ(map.OwnerOfKey(key), ShardOf(key, 8) % 3);
  }
}

TEST(ShardMapTest, ValidateNamesTheBadShard) {
  ShardMap map = InitialShardMap(4, {"a:1", "b:2"});
  map.owner[3] = 2;
  const absl::Status s = ValidateShardMap(map);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("shard 3 has owner 2"), absl::string_view::npos)
      << s;
  EXPECT_FALSE(ValidateShardMap(ShardMap{}).ok());
}

}  // namespace
}  // namespace sampan
