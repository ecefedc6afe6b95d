#include "coordinator/fleet_plan.h"

#include <algorithm>
#include <numeric>

namespace sampan {

std::vector<PlannedMove> PlanMoves(const std::vector<uint32_t>& owner,
                                   uint32_t size) {
  const uint32_t num_shards = owner.size();
  if (size == 0) return {};  // no fleet (a coordinator of trainers only)
  std::vector<std::vector<uint32_t>> held(size);  // pserver -> shards
  std::vector<uint32_t> leaving;                  // shards of pservers >= size
  for (uint32_t s = 0; s < num_shards; ++s) {
    if (owner[s] < size) {
      held[owner[s]].push_back(s);
    } else {
      leaving.push_back(s);
    }
  }
  // Shares: num_shards / size each, one more for the `extra` pservers that
  // hold the most already (ties: lower index), which minimizes the moves.
  std::vector<uint32_t> order(size);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return held[a].size() > held[b].size();
  });
  std::vector<uint32_t> share(size, num_shards / size);
  for (uint32_t i = 0; i < num_shards % size; ++i) ++share[order[i]];

  std::vector<PlannedMove> surplus;  // `to` filled in below
  for (uint32_t s : leaving) surplus.push_back({s, owner[s], 0});
  for (uint32_t p = 0; p < size; ++p) {
    // The highest-numbered shards leave, so a plan is easy to read.
    while (held[p].size() > share[p]) {
      surplus.push_back({held[p].back(), p, 0});
      held[p].pop_back();
    }
  }
  std::sort(surplus.begin(), surplus.end(),
            [](const PlannedMove& a, const PlannedMove& b) {
              return a.shard < b.shard;
            });
  size_t next = 0;
  for (uint32_t p = 0; p < size && next < surplus.size(); ++p) {
    for (size_t n = held[p].size(); n < share[p] && next < surplus.size();
         ++n) {
      surplus[next++].to = p;
    }
  }
  return surplus;
}

}  // namespace sampan
