// Test and benchmark helpers for collective suites: an in-process
// coordinator and rank processes spawned with a piped stdout.
//
// Children are started with posix_spawn (fork+exec), so gRPC state of the
// parent never leaks into them. Every wait has a deadline; a child that
// outlives its deadline is SIGKILLed, so a suite cannot hang.
#ifndef SAMPAN_TESTS_COLLECTIVE_HARNESS_H_
#define SAMPAN_TESTS_COLLECTIVE_HARNESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace sampan {
namespace testing {

// A coordinator service on 127.0.0.1:<any port>, stopped on destruction.
class TestCoordinator {
 public:
  static absl::StatusOr<std::unique_ptr<TestCoordinator>> Start();
  ~TestCoordinator();
  const std::string& address() const { return address_; }

 private:
  TestCoordinator() = default;
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // read end of the child's stdout; owned by the caller
};

// Starts `binary` with `args` (argv[1..]); stderr is inherited.
absl::StatusOr<Child> Spawn(const std::string& binary,
                            const std::vector<std::string>& args);

// Reads one line (without '\n') from `fd`; DEADLINE_EXCEEDED after `timeout`,
// OUT_OF_RANGE at end of file.
absl::StatusOr<std::string> ReadLine(int fd, absl::Duration timeout);

// Reads everything until end of file or `timeout`.
std::string ReadAll(int fd, absl::Duration timeout);

// Waits for `pid` until `deadline`; returns its exit code, or -signal when a
// signal ended it. After the deadline the child is SIGKILLed and reaped and
// DEADLINE_EXCEEDED is returned.
absl::StatusOr<int> WaitExit(pid_t pid, absl::Time deadline);

// What RunRanks saw: rank 0's stdout and how many ranks did not exit 0.
struct RanksResult {
  std::string rank0_output;
  int failed = 0;
};

// Runs `ranks` copies of `binary`, each with "--role=rank --rank=R
// --ranks=N --coordinator=ADDRESS" and then `extra`, until they end; each
// gets `timeout` (then it is killed and counts as failed).
absl::StatusOr<RanksResult> RunRanks(const std::string& binary, int ranks,
                                     const std::string& coordinator,
                                     const std::vector<std::string>& extra,
                                     absl::Duration timeout);

}  // namespace testing
}  // namespace sampan

#endif  // SAMPAN_TESTS_COLLECTIVE_HARNESS_H_
