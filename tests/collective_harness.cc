#include "tests/collective_harness.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "coordinator/coordinator.h"
#include "proto/job.pb.h"

extern char** environ;

namespace sampan {
namespace testing {

absl::StatusOr<std::unique_ptr<TestCoordinator>> TestCoordinator::Start() {
  std::unique_ptr<TestCoordinator> c(new TestCoordinator());
  JobConfig config;
  c->service_ = NewCoordinatorService(config);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(c->service_.get());
  c->server_ = builder.BuildAndStart();
  if (c->server_ == nullptr || port == 0) {
    return absl::UnavailableError("test coordinator: cannot listen");
  }
  c->address_ = absl::StrCat("127.0.0.1:", port);
  return c;
}

TestCoordinator::~TestCoordinator() {
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  }
}

absl::StatusOr<Child> Spawn(const std::string& binary,
                            const std::vector<std::string>& args) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  std::vector<std::string> argv_strings = {binary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(),
                       environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return absl::InternalError(
        absl::StrCat("posix_spawn ", binary, ": ", strerror(rc)));
  }
  return Child{pid, fds[0]};
}

absl::StatusOr<std::string> ReadLine(int fd, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string line;
  while (true) {
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(
        std::max(deadline - absl::Now(), absl::ZeroDuration())));
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("no line within ", absl::FormatDuration(timeout),
                       " (so far: '", line, "')"));
    }
    char c;
    ssize_t n = read(fd, &c, 1);
    if (n <= 0)
      return absl::OutOfRangeError(absl::StrCat("EOF after '", line, "'"));
    if (c == '\n') return line;
    line.push_back(c);
  }
}

std::string ReadAll(int fd, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string out;
  char buf[4096];
  while (absl::Now() < deadline) {
    const int ms =
        static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) break;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, n);
  }
  return out;
}

absl::StatusOr<int> WaitExit(pid_t pid, absl::Time deadline) {
  while (true) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      if (WIFSIGNALED(status)) return -WTERMSIG(status);
      continue;
    }
    if (r < 0)
      return absl::InternalError(absl::StrCat("waitpid: ", strerror(errno)));
    if (absl::Now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return absl::DeadlineExceededError(
          absl::StrCat("child ", pid, " still running at its deadline"));
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
}

absl::StatusOr<RanksResult> RunRanks(const std::string& binary, int ranks,
                                     const std::string& coordinator,
                                     const std::vector<std::string>& extra,
                                     absl::Duration timeout) {
  std::vector<Child> children;
  for (int r = 0; r < ranks; ++r) {
    std::vector<std::string> args = {
        "--role=rank", absl::StrCat("--rank=", r),
        absl::StrCat("--ranks=", ranks),
        absl::StrCat("--coordinator=", coordinator)};
    args.insert(args.end(), extra.begin(), extra.end());
    absl::StatusOr<Child> child = Spawn(binary, args);
    if (!child.ok()) {
      for (const Child& c : children) kill(c.pid, SIGKILL);
      return child.status();
    }
    children.push_back(*child);
  }
  const absl::Time deadline = absl::Now() + timeout;
  RanksResult result;
  result.rank0_output = ReadAll(children[0].stdout_fd, timeout);
  for (const Child& c : children) {
    absl::StatusOr<int> code = WaitExit(c.pid, deadline + absl::Minutes(1));
    if (!code.ok() || *code != 0) ++result.failed;
    close(c.stdout_fd);
  }
  return result;
}

}  // namespace testing
}  // namespace sampan
