#include "cli/submit.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/render.h"
#include "common/config.h"
#include "proto/job.pb.h"

namespace sampan {
namespace {

constexpr int kExitUsage = 2;

struct RenderArgs {
  JobConfig job;
  std::string target = "k8s";
  std::string out;
};

// Accepts `JOB.yaml`, `--target=T` or `--target T`, `-o DIR` or `--out=DIR`.
absl::StatusOr<RenderArgs> ParseRenderArgs(int argc, char** argv) {
  RenderArgs args;
  std::string config;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const std::string& flag) -> absl::StatusOr<std::string> {
      if (a.size() > flag.size() &&
          a.compare(0, flag.size() + 1, flag + "=") == 0)
        return a.substr(flag.size() + 1);
      if (i + 1 < argc) return std::string(argv[++i]);
      return absl::InvalidArgumentError(flag + " needs a value");
    };
    absl::StatusOr<std::string> v = std::string();
    if (a == "-o" || a.rfind("--out", 0) == 0) {
      v = value(a == "-o" ? "-o" : "--out");
      if (v.ok()) args.out = *v;
    } else if (a.rfind("--target", 0) == 0) {
      v = value("--target");
      if (v.ok()) args.target = *v;
    } else if (a.rfind("-", 0) == 0 || !config.empty()) {
      return absl::InvalidArgumentError("unexpected argument " + a);
    } else {
      config = a;
    }
    if (!v.ok()) return v.status();
  }
  if (config.empty()) return absl::InvalidArgumentError("JOB.yaml is required");
  if (args.target != "k8s" && args.target != "config" &&
      args.target != "tls-names") {
    return absl::InvalidArgumentError(
        "--target must be k8s, config or tls-names, got " + args.target);
  }
  absl::StatusOr<JobConfig> job = LoadJobConfig(config);
  if (!job.ok()) return job.status();
  if (absl::Status s = ValidateForRun(*job); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(config, ": ", s.message()));
  }
  args.job = *job;
  return args;
}

// Runs argv, its output going to ours; returns its exit status (127 when it
// cannot be started). `quiet` discards its output.
int RunCommand(const std::vector<std::string>& args, bool quiet) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (quiet) {
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
    }
    std::vector<char*> argv;
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int UsageError(const absl::Status& s, const char* usage) {
  std::cerr << "error: " << s.message() << "\n" << usage;
  return kExitUsage;
}

constexpr char kRenderUsage[] =
    "usage: sampan render JOB.yaml --target=k8s -o DIR\n"
    "       sampan render JOB.yaml --target=config\n"
    "       sampan render JOB.yaml --target=tls-names\n";
constexpr char kSubmitUsage[] = "usage: sampan submit JOB.yaml [-o DIR]\n";

}  // namespace

int RenderMain(int argc, char** argv) {
  absl::StatusOr<RenderArgs> args = ParseRenderArgs(argc, argv);
  if (!args.ok()) return UsageError(args.status(), kRenderUsage);
  if (args->target == "config") {
    std::cout << JobToYaml(args->job);
    return 0;
  }
  if (args->target == "tls-names") {
    absl::StatusOr<std::vector<std::string>> names =
        CertificateNames(args->job);
    if (!names.ok()) return UsageError(names.status(), "");
    for (const std::string& n : *names) std::cout << n << "\n";
    return 0;
  }
  if (args->out.empty()) {
    return UsageError(absl::InvalidArgumentError("-o DIR is required"),
                      kRenderUsage);
  }
  absl::StatusOr<std::vector<RenderedFile>> files = RenderKubernetes(args->job);
  if (!files.ok()) return UsageError(files.status(), "");
  absl::Status s = WriteRendered(args->out, *files);
  if (!s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 1;
  }
  std::cout << "wrote " << files->size() << " files to " << args->out
            << " (apply with `kubectl apply -k " << args->out << "`)\n";
  const std::string& secret = args->job.kubernetes().tls_secret();
  if (!secret.empty()) {
    std::cout << "the pods mount the Secret " << secret
              << " (tls.crt, tls.key, ca.crt, token); its certificate must "
                 "name the hosts of `sampan render JOB.yaml "
                 "--target=tls-names`: scripts/make-certs.sh JOB.yaml DIR "
                 "makes a CA, the certificate and a token, and prints the "
                 "kubectl command that creates the Secret\n";
  }
  return 0;
}

int SubmitMain(int argc, char** argv) {
  absl::StatusOr<RenderArgs> args = ParseRenderArgs(argc, argv);
  if (!args.ok()) return UsageError(args.status(), kSubmitUsage);
  if (args->out.empty()) args->out = args->job.output_dir() + "/k8s";
  absl::StatusOr<std::vector<RenderedFile>> files = RenderKubernetes(args->job);
  if (!files.ok()) return UsageError(files.status(), "");
  absl::Status s = WriteRendered(args->out, *files);
  if (!s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 1;
  }
  // A current context is what `kubectl apply` would talk to; without one it
  // would fall back to localhost:8080 and fail with a confusing message.
  const int context =
      RunCommand({"kubectl", "config", "current-context"}, true);
  if (context == 127) {
    std::cerr << "error: kubectl not found; the objects are in " << args->out
              << ", apply them with `kubectl apply -k " << args->out
              << "` where kubectl is installed\n";
    return 1;
  }
  if (context != 0) {
    std::cerr << "error: no Kubernetes cluster configured (kubectl has no "
                 "current context; set KUBECONFIG or run `kubectl config "
                 "use-context`). Nothing was applied; the objects are in "
              << args->out << "\n";
    return 1;
  }
  const int rc = RunCommand({"kubectl", "apply", "-k", args->out}, false);
  if (rc != 0) {
    std::cerr << "error: kubectl apply -k " << args->out << " failed (exit "
              << rc << ")\n";
    return 1;
  }
  std::cout << "submitted; watch with `kubectl get pods -l "
               "app.kubernetes.io/name=sampan`\n";
  return 0;
}

}  // namespace sampan
