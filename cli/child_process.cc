#include "cli/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace sampan {

std::string LastLines(const std::string& path, int n) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > n) lines.pop_front();
  }
  std::string out;
  for (const std::string& l : lines) absl::StrAppend(&out, "    ", l, "\n");
  return out;
}

void SetFlag(std::vector<std::string>* args, const std::string& name,
             const std::string& value) {
  const std::string prefix = "--" + name + "=";
  args->erase(std::remove_if(args->begin(), args->end(),
                             [&](const std::string& a) {
                               return a.rfind(prefix, 0) == 0;
                             }),
              args->end());
  if (!value.empty()) args->push_back(prefix + value);
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status))
    return absl::StrCat("exit status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return absl::StrCat("killed by signal ", WTERMSIG(status), " (",
                        strsignal(WTERMSIG(status)), ")");
  }
  return "stopped";
}

void ExecChild(const Child& child, pid_t parent, int log_mode) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);  // the launcher died before prctl
  setpgid(0, 0);  // Ctrl-C reaches the launcher only; it stops us in order
  const int fd = open(child.log_path.c_str(),
                      O_WRONLY | O_CREAT | log_mode | O_CLOEXEC, 0644);
  if (fd >= 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
  }
  std::vector<char*> argv;
  std::string self = "sampan";
  argv.push_back(self.data());
  for (const std::string& a : child.args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  std::fprintf(stderr, "exec failed: %s\n", std::strerror(errno));
  _exit(127);
}

}  // namespace sampan
