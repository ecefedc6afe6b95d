#include "common/shard_map.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace sampan {

std::vector<uint32_t> ShardMap::ShardsOf(uint32_t index) const {
  std::vector<uint32_t> shards;
  for (uint32_t s = 0; s < owner.size(); ++s) {
    if (owner[s] == index) shards.push_back(s);
  }
  return shards;
}

ShardMap InitialShardMap(uint32_t num_shards,
                         std::vector<std::string> addresses) {
  ShardMap map;
  map.version = 1;
  const uint32_t n = addresses.size();
  map.owner.resize(num_shards);
  for (uint32_t s = 0; s < num_shards; ++s) map.owner[s] = PserverOfShard(s, n);
  map.addresses = std::move(addresses);
  return map;
}

absl::Status ValidateShardMap(const ShardMap& map) {
  if (map.owner.empty()) {
    return absl::InvalidArgumentError("shard map: no shards");
  }
  for (uint32_t s = 0; s < map.owner.size(); ++s) {
    if (map.owner[s] >= map.addresses.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard map version ", map.version, ": shard ", s,
                       " has owner ", map.owner[s], " but the map has ",
                       map.addresses.size(), " pservers"));
    }
  }
  return absl::OkStatus();
}

}  // namespace sampan
