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
#include "cli/render_pod.h"
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

// 0 when kubectl has a current context; otherwise says why and returns 1.
int CheckKubectl(const std::string& nothing_done) {
  // A current context is what kubectl would talk to; without one it would
  // fall back to localhost:8080 and fail with a confusing message.
  const int context =
      RunCommand({"kubectl", "config", "current-context"}, true);
  if (context == 127) {
    std::cerr << "error: kubectl not found; " << nothing_done << "\n";
    return 1;
  }
  if (context != 0) {
    std::cerr << "error: no Kubernetes cluster configured (kubectl has no "
                 "current context; set KUBECONFIG or run `kubectl config "
                 "use-context`). "
              << nothing_done << "\n";
    return 1;
  }
  return 0;
}

// The first line kubectl prints for `args`; "" when it fails.
std::string KubectlOutput(const std::vector<std::string>& args) {
  std::string cmd = "kubectl";
  for (const std::string& a : args) absl::StrAppend(&cmd, " '", a, "'");
  FILE* pipe = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return "";
  char line[256] = {0};
  const bool read = fgets(line, sizeof(line), pipe) != nullptr;
  if (pclose(pipe) != 0 || !read) return "";
  std::string out = line;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
    out.pop_back();
  }
  return out;
}

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

int ScaleOnKubernetes(const JobConfig& job, uint32_t pservers,
                      double wait_seconds) {
  absl::StatusOr<std::string> name = k8s::DnsName(job.name());
  if (!name.ok()) {
    std::cerr << "error: " << name.status().message() << "\n";
    return kExitUsage;
  }
  if (int rc = CheckKubectl("Nothing was scaled."); rc != 0) return rc;
  const std::string statefulset = "statefulset/" + *name + "-pserver";
  int current = 0;
  if (!absl::SimpleAtoi(KubectlOutput({"get", statefulset, "-o",
                                       "jsonpath={.spec.replicas}"}),
                        &current)) {
    std::cerr << "error: cannot read the replicas of " << statefulset
              << " (is job " << job.name() << " submitted?)\n";
    return 1;
  }
  const std::string replicas = absl::StrCat("--replicas=", pservers);
  // Growing: the new pods first (they register; then shards move to them).
  if (static_cast<int>(pservers) > current &&
      RunCommand({"kubectl", "scale", statefulset, replicas}, false) != 0) {
    std::cerr << "error: kubectl scale " << statefulset << " " << replicas
              << " failed\n";
    return 1;
  }
  // The coordinator listens on its pod's IP: ask it from inside the pod.
  const int rc = RunCommand(
      {"kubectl", "exec", "deploy/" + *name + "-coordinator", "--", "sh", "-c",
       absl::StrCat("sampan scale ", k8s::kConfigDir, "/job.yaml --pservers=",
                    pservers, " --wait_seconds=", wait_seconds,
                    " --coordinator=$POD_IP:", job.kubernetes().grpc_port())},
      false);
  if (rc != 0) return rc;
  // Shrinking: the pods that left own nothing by now.
  if (static_cast<int>(pservers) < current &&
      RunCommand({"kubectl", "scale", statefulset, replicas}, false) != 0) {
    std::cerr << "error: the fleet is " << pservers << " pservers, but "
              << "kubectl scale " << statefulset << " " << replicas
              << " failed; run it again\n";
    return 1;
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
  if (int rc = CheckKubectl(absl::StrCat(
          "Nothing was applied; the objects are in ", args->out,
          " (apply them with `kubectl apply -k ", args->out, "`)"));
      rc != 0) {
    return rc;
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
