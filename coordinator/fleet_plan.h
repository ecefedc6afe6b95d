// Which shards a rescale moves: the fewest moves that leave a fleet of
// `size` pservers balanced (each owns num_shards / size shards, rounded
// down or up), every shard of a pserver leaving the fleet moved off it.
// Pure functions; coordinator/fleet.h carries the moves out one at a time.
#ifndef SAMPAN_COORDINATOR_FLEET_PLAN_H_
#define SAMPAN_COORDINATOR_FLEET_PLAN_H_

#include <cstdint>
#include <vector>

namespace sampan {

struct PlannedMove {
  uint32_t shard = 0;
  uint32_t from = 0;
  uint32_t to = 0;
};

// `owner[s]` is shard s's pserver (any index); `size` 0 plans nothing (a
// job without pservers). Pservers below
// `size` keep as many of their shards as their share allows (the larger
// shares go to those that own most already); the rest, and every shard of a
// pserver at `size` or above, go to the pservers below their share, lowest
// index first. Deterministic: the same owners give the same moves.
std::vector<PlannedMove> PlanMoves(const std::vector<uint32_t>& owner,
                                   uint32_t size);

}  // namespace sampan

#endif  // SAMPAN_COORDINATOR_FLEET_PLAN_H_
