// The building blocks of rendered pods (cli/render.h): where a pod keeps
// its config, work directory and TLS files, the container of each
// component (`sampan <component>` with its flags, probes, mounts, security
// context), the pod template around it, and the labels, selectors and
// Services that tie objects together. cli/render.cc assembles the objects
// of a job from them.
#ifndef SAMPAN_CLI_RENDER_POD_H_
#define SAMPAN_CLI_RENDER_POD_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "cli/render_checkpoint.h"
#include "cli/render_yaml.h"
#include "proto/job.pb.h"

namespace sampan {
namespace k8s {

inline constexpr char kConfigDir[] = "/etc/sampan";
inline constexpr char kConfigPath[] = "/etc/sampan/job.yaml";
inline constexpr char kWorkDir[] = "/var/lib/sampan";
inline constexpr char kTlsDir[] = "/etc/sampan/tls";
inline constexpr int kUid = 10001;  // the Dockerfile's `sampan` user
// Exists while a predictor has a version loaded (serve --ready_file).
inline constexpr char kServingReady[] = "/var/lib/sampan/serving.ready";

// What every function here needs to know about the job being rendered.
struct Ctx {
  const JobConfig& job;
  const KubernetesConfig& k8s;
  std::string name;  // DNS label
  bool synthetic;
  CheckpointVolume checkpoints;  // mounted in every pod when shared

  std::string Coordinator() const {
    return absl::StrCat(name, "-coordinator:", k8s.grpc_port());
  }
};

// A DNS-1123 label from the job name: lower case, [a-z0-9-], at most 40
// characters so that "<name>-coordinator" and pod suffixes stay under 63.
absl::StatusOr<std::string> DnsName(const std::string& name);

// serving.shards > 1: lookup shards and predictor front ends.
bool Sharded(const Ctx& c);

// The app.kubernetes.io labels of `component`'s objects, and metadata
// (name, namespace, labels) of an object called `name`.
Yaml Labels(const Ctx& c, const std::string& component);
Yaml Metadata(const Ctx& c, const std::string& name,
              const std::string& component);

// The container of `component` (coordinator, pserver, trainer, serving,
// lookup): `sampan` with the component's flags, env, ports, resources,
// probes for servers, mounts (`work_volume` at the work directory) and a
// locked-down security context.
Yaml Container(const Ctx& c, const std::string& component,
               const ResourceConfig& resources, const std::string& work_volume);

// The pod template around `container`: labels, scrape annotations, the
// non-root security context and its volumes (`work_empty_dir`: an emptyDir
// as the work volume; else a volume claim template provides it).
Yaml PodTemplate(const Ctx& c, const std::string& component, Yaml container,
                 bool work_empty_dir);

// The selector of `component`'s pods, and a Service for them (gRPC and
// metrics ports; `headless` gives each pod a DNS name, ready or not).
Yaml Selector(const Ctx& c, const std::string& component);
Yaml Service(const Ctx& c, const std::string& component, bool headless);

// The objects as one multi-document YAML text.
std::string Documents(std::initializer_list<Yaml> objects);

}  // namespace k8s
}  // namespace sampan

#endif  // SAMPAN_CLI_RENDER_POD_H_
