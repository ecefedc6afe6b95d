// Test helper for crash_test: pushes forever to a RocksDB table and prints
// each acknowledged sequence on its own line, flushed, so the parent knows
// exactly what was acknowledged when it SIGKILLs us.
//
//   crash_child DIR wal|sync WRITER FIRST_SEQUENCE VARIANT (crash_testlib.h)
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "sparse_table/crash_testlib.h"
#include "sparse_table/sparse_table.h"

namespace sampan {

int CrashChildMain(int argc, char** argv) {
  if (argc != 6) return 2;
  const TableOptions o =
      CrashOptions(argv[1], argv[5], std::string(argv[2]) == "sync");
  auto table = NewTable(o);
  if (!table.ok()) {
    std::fprintf(stderr, "open: %s\n", table.status().ToString().c_str());
    return 1;
  }
  const uint64_t writer = std::strtoull(argv[3], nullptr, 10);
  std::vector<float> shows(64, 1), clicks(64, 0);
  for (uint64_t seq = std::strtoull(argv[4], nullptr, 10);; ++seq) {
    const std::vector<uint64_t> keys = CrashKeysOf(seq);
    const std::vector<float> grads = CrashGradsOf(seq, (*table)->pull_dim());
    PushBatch b;
    b.keys = keys;
    b.grads = grads.data();
    b.shows = shows.data();
    b.clicks = clicks.data();
    b.writer_id = writer;
    b.sequence = seq;
    if (!(*table)->Push(b).ok()) return 1;
    std::printf("%llu\n", static_cast<unsigned long long>(seq));
    std::fflush(stdout);
  }
}

}  // namespace sampan

int main(int argc, char** argv) { return sampan::CrashChildMain(argc, argv); }
