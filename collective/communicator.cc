#include "collective/communicator.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "collective/backends.h"

namespace sampan {
namespace collective {

namespace {

// What makes two processes able to share memory and see each other in /proc:
// the same host, boot and pid namespace.
std::string HostIdentity() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  char ns[128] = {0};
  ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
  if (n < 0) ns[0] = 0;
  return absl::StrCat(host, "|", boot, "|", ns);
}

// Publishes this rank's host identity and reads everyone's; every rank reads
// the same values, so every rank reaches the same answer.
absl::StatusOr<bool> AllRanksOnThisHost(const CommunicatorOptions& options,
                                        CoordinatorClient* client) {
  const std::string prefix =
      absl::StrCat("collective/", options.name, "/host/");
  const std::string mine = HostIdentity();
  absl::Status s = client->KvPut(absl::StrCat(prefix, options.rank), mine);
  if (!s.ok()) return s;
  bool same = true;
  for (int r = 0; r < options.size; ++r) {
    absl::StatusOr<std::string> v =
        client->KvGet(absl::StrCat(prefix, r), true, options.timeout);
    if (!v.ok()) return v.status();
    same = same && *v == mine;
  }
  return same;
}

absl::StatusOr<std::unique_ptr<Communicator>> NewCpuCommunicator(
    const CommunicatorOptions& options) {
  if (!options.shared_memory) return NewGlooCommunicator(options);
  CoordinatorClient client(options.coordinator_address, absl::Seconds(10),
                           options.timeout, options.credentials);
  absl::StatusOr<bool> local = AllRanksOnThisHost(options, &client);
  if (!local.ok()) return local.status();
  if (*local) return NewShmCommunicator(options, &client);
  return NewGlooCommunicator(options);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> NewCommunicator(
    const CommunicatorOptions& options) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "collective: rank ", options.rank, " not in [0, ", options.size, ")"));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("collective: timeout must be positive");
  }
  switch (options.backend) {
    case Backend::kGloo:
      return NewCpuCommunicator(options);
    case Backend::kNccl:
      return NewNcclCommunicator(options);
    case Backend::kAuto:
      // Every rank must pick the same backend; ranks of one job run on
      // alike machines, so each deciding locally agrees.
      if (NcclAvailable().ok()) return NewNcclCommunicator(options);
      return NewCpuCommunicator(options);
  }
  return absl::InvalidArgumentError("collective: unknown backend");
}

}  // namespace collective
}  // namespace sampan
