// The versioned shard map: which pserver owns each shard of a job's tables,
// and where each pserver serves.
//
// Keys go to shards by ShardOf() (common/hash.h), a fixed function of the
// key and the table's shard count; shards go to pservers by this map, which
// the coordinator holds and hands out with the cluster spec
// (proto/coordinator.proto ShardMap). Its version increases with every change
// (a pserver that came back at another address; a shard that moved), so a
// client can tell a newer map from its own.
//
// A pserver refuses a key of a shard it does not own with ABORTED and the
// version of its map in the trailing metadata kShardMapVersionKey; a client
// that gets that fetches the coordinator's map and resends (the same writer
// sequence for a push, so it is still applied once).
#ifndef SAMPAN_COMMON_SHARD_MAP_H_
#define SAMPAN_COMMON_SHARD_MAP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/hash.h"

namespace sampan {

// The trailing metadata a pserver's "not my shard" refusal carries: the
// version of the shard map it serves by, in decimal.
inline constexpr char kShardMapVersionKey[] = "sampan-shard-map-version";

struct ShardMap {
  uint64_t version = 0;
  std::vector<uint32_t> owner;         // shard -> pserver index
  std::vector<std::string> addresses;  // pserver index -> host:port

  uint32_t num_shards() const { return owner.size(); }
  uint32_t num_pservers() const { return addresses.size(); }
  uint32_t OwnerOfKey(uint64_t key) const {
    return owner[ShardOf(key, num_shards())];
  }
  // The shards pserver `index` owns, ascending.
  std::vector<uint32_t> ShardsOf(uint32_t index) const;
};

// A job's first map (version 1): shard s on pserver s % num_pservers.
ShardMap InitialShardMap(uint32_t num_shards,
                         std::vector<std::string> addresses);

// OK when every shard has an owner among the map's pservers and there is at
// least one shard; otherwise an error naming the first bad entry.
absl::Status ValidateShardMap(const ShardMap& map);

}  // namespace sampan

#endif  // SAMPAN_COMMON_SHARD_MAP_H_
