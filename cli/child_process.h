// The launcher's children (cli/launcher.h): what `sampan run` knows of each
// process it started, and the plumbing to start one and report its end.
#ifndef SAMPAN_CLI_CHILD_PROCESS_H_
#define SAMPAN_CLI_CHILD_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace sampan {

struct Child {
  std::string name;  // "pserver-1"
  std::string log_path;
  pid_t pid = -1;
  bool is_trainer = false;
  int pserver_index = -1;  // -1: not a pserver
  bool exited = false;
  int status = 0;
  std::vector<std::string> args;  // as passed to `sampan`
  // A pserver whose table is durable comes back after a crash on a new port
  // (its clients retry meanwhile and follow the coordinator's shard map to
  // it); serving comes back on its port; a trainer of a job that takes
  // checkpoints comes back at its checkpointed data position. <= 0 means
  // never restarted.
  int restarts_left = 0;
  std::string port_file;
  // A pserver the fleet no longer has (`sampan scale` down): stopped on
  // purpose, its exit is expected.
  bool retired = false;
};

// The last `n` lines of the file at `path`, each indented by four spaces.
std::string LastLines(const std::string& path, int n);

// Replaces --name=... in `args` with --name=value (none when value is "").
void SetFlag(std::vector<std::string>* args, const std::string& name,
             const std::string& value);

// "exit status 1", "killed by signal 9 (Killed)", "stopped".
std::string DescribeExit(int status);

// In a forked child of process `parent`: dies with the parent
// (PR_SET_PDEATHSIG), leaves its process group (Ctrl-C reaches the launcher
// only, which stops the children in order), sends its output to
// child.log_path (opened with `log_mode`: O_TRUNC or O_APPEND) and execs
// this binary with child.args. Never returns.
[[noreturn]] void ExecChild(const Child& child, pid_t parent, int log_mode);

}  // namespace sampan

#endif  // SAMPAN_CLI_CHILD_PROCESS_H_
