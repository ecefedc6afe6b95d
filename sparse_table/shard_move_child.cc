// Test helper for shard_move_crash_test: does a shard move step on RocksDB
// tables, prints "done" once it returned, then waits to be SIGKILLed.
//
//   shard_move_child MODE DIR_A DIR_B import|drop
//
// import: A gets writer 11's pushes 1-3 of MoveKeys(200); B gets writer 9's
// pushes 1-2 of the same keys (stale in shard 2, which B then imports from
// A). drop: B gets writer 9's pushes, then drops shard 2. The pushes stay
// in B's redo log (redo modes): recovery must not replay them onto shard 2.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "sparse_table/shard_move_testlib.h"

namespace sampan {

int ShardMoveChildMain(int argc, char** argv) {
  if (argc != 5) return 2;
  const MoveMode mode = MoveModeNamed(argv[1]);
  const std::vector<uint64_t> keys = MoveKeys(200);
  auto b = NewTable(MoveTableOptions(mode, argv[3]));
  if (!b.ok() || !PushRounds(**b, 9, 1, 2, keys).ok()) return 1;
  absl::Status st;
  if (std::string(argv[4]) == "import") {
    auto a = NewTable(MoveTableOptions(mode, argv[2]));
    if (!a.ok() || !PushRounds(**a, 11, 1, 3, keys).ok()) return 1;
    st = MoveShard(**a, **b, 2);
  } else {
    st = (*b)->DropShard(2).status();
  }
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("done\n");
  std::fflush(stdout);
  for (;;) pause();
}

}  // namespace sampan

int main(int argc, char** argv) {
  return sampan::ShardMoveChildMain(argc, argv);
}
