// Test helper for redo_log_power_cut_test: opens the redo log in DIR with
// sync (replaying, and cutting a torn last record), appends one record
// "after", waits until it is durable, says so and SIGKILLs itself, all
// under tests/crashfs, which the test then cuts as a power cut would.
//
//   redo_log_cut_child DIR
#include <signal.h>

#include <cstdio>
#include <string>

#include "sparse_table/redo_log.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  sampan::RedoLog::Options o;
  o.dir = argv[1];
  o.sync = true;
  int replayed = 0;
  auto log = sampan::RedoLog::Open(o, 0, [&](uint64_t, absl::string_view) {
    ++replayed;
    return absl::OkStatus();
  });
  if (!log.ok()) {
    std::fprintf(stderr, "open: %s\n", log.status().ToString().c_str());
    return 1;
  }
  std::string r = sampan::RedoLog::NewRecord(5);
  r += "after";
  const uint64_t lsn = (*log)->Append(std::move(r));
  if (absl::Status st = (*log)->WaitDurable(lsn); !st.ok()) {
    std::fprintf(stderr, "append: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("replayed %d, appended LSN %llu\n", replayed,
              static_cast<unsigned long long>(lsn));
  std::fflush(stdout);
  raise(SIGKILL);
  return 1;
}
