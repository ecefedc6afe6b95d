#include "cli/render_pod.h"

#include "absl/strings/ascii.h"

namespace sampan {
namespace k8s {
namespace {

Yaml EnvField(const std::string& name, const std::string& path) {
  return Yaml::Map(
      {{"name", name},
       {"valueFrom",
        Yaml::Map({{"fieldRef", Yaml::Map({{"fieldPath", path}})}})}});
}

Yaml Env(const Ctx& c, const std::string& component) {
  Yaml env = Yaml::List({EnvField("POD_IP", "status.podIP"),
                         EnvField("POD_NAME", "metadata.name")});
  if (component == "pserver" || component == "lookup") {
    env.Add(EnvField("SAMPAN_INDEX",
                     "metadata.labels['apps.kubernetes.io/pod-index']"));
  }
  if (component == "trainer") {
    env.Add(EnvField(
        "SAMPAN_RANK",
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"));
  }
  return env;
}

Yaml Resources(const ResourceConfig& r) {
  Yaml requests = Yaml::Map(), limits = Yaml::Map();
  if (!r.cpu_request().empty()) requests.Set("cpu", r.cpu_request());
  if (!r.memory_request().empty()) requests.Set("memory", r.memory_request());
  if (!r.cpu_limit().empty()) limits.Set("cpu", r.cpu_limit());
  if (!r.memory_limit().empty()) limits.Set("memory", r.memory_limit());
  if (r.gpus() > 0) {
    requests.Set("nvidia.com/gpu", r.gpus());
    limits.Set("nvidia.com/gpu", r.gpus());
  }
  Yaml out = Yaml::Map();
  if (!requests.empty()) out.Set("requests", requests);
  if (!limits.empty()) out.Set("limits", limits);
  return out;
}

// The kubelet's gRPC probe speaks plaintext only; with TLS it checks that
// the port accepts connections instead.
Yaml GrpcProbe(const Ctx& c, int initial_delay, int failures) {
  const char* kind = c.k8s.tls_secret().empty() ? "grpc" : "tcpSocket";
  return Yaml::Map({{kind, Yaml::Map({{"port", c.k8s.grpc_port()}})},
                    {"initialDelaySeconds", initial_delay},
                    {"periodSeconds", 5},
                    {"timeoutSeconds", 2},
                    {"failureThreshold", failures}});
}

Yaml Ports(const Ctx& c, bool grpc) {
  Yaml ports = Yaml::List();
  if (grpc) {
    ports.Add(Yaml::Map({{"name", "grpc"},
                         {"containerPort", c.k8s.grpc_port()},
                         {"protocol", "TCP"}}));
  }
  ports.Add(Yaml::Map({{"name", "metrics"},
                       {"containerPort", c.k8s.metrics_port()},
                       {"protocol", "TCP"}}));
  return ports;
}

Yaml ContainerSecurity() {
  return Yaml::Map(
      {{"allowPrivilegeEscalation", false},
       {"readOnlyRootFilesystem", true},
       {"capabilities", Yaml::Map({{"drop", Yaml::List({"ALL"})}})}});
}

Yaml Mounts(const Ctx& c, const std::string& component,
            const std::string& work_volume) {
  Yaml m = Yaml::List(
      {Yaml::Map(
           {{"name", "config"}, {"mountPath", kConfigDir}, {"readOnly", true}}),
       Yaml::Map({{"name", work_volume}, {"mountPath", kWorkDir}})});
  if (!c.k8s.tls_secret().empty()) {
    m.Add(Yaml::Map(
        {{"name", "tls"}, {"mountPath", kTlsDir}, {"readOnly", true}}));
  }
  if (c.checkpoints.shared) {
    m.Add(
        Yaml::Map({{"name", "checkpoints"}, {"mountPath", kCheckpointMount}}));
  }
  if (component == "trainer" && !c.k8s.data_claim().empty()) {
    m.Add(Yaml::Map({{"name", "data"},
                     {"mountPath", c.k8s.data_mount_path()},
                     {"readOnly", true}}));
  }
  return m;
}

// The flags of `sampan <component>`; $(VAR)s are expanded by the kubelet.
Yaml Args(const Ctx& c, const std::string& component) {
  // `sampan serve JOB.yaml`: predictors (and lookup shards) follow the
  // job's versions.
  const bool serve = component == "serving" || component == "lookup";
  Yaml a =
      serve ? Yaml::List({"serve", kConfigPath,
                          absl::StrCat("--ready_file=", kServingReady)})
            : Yaml::List({component, absl::StrCat("--config=", kConfigPath)});
  if (component == "serving" && Sharded(c)) a.Add("--role=predictor");
  if (component == "lookup") {
    a.Add("--role=lookup");
    a.Add("--shard=$(SAMPAN_INDEX)");
  }
  if (component == "pserver") a.Add("--index=$(SAMPAN_INDEX)");
  if (component == "trainer") a.Add("--rank=$(SAMPAN_RANK)");
  // A replacement trainer pod resumes at its position in the newest
  // complete checkpoint on the shared volume (none yet: from the start).
  if (component == "trainer" && c.checkpoints.shared) {
    a.Add("--checkpoint=latest");
  }
  if (component != "coordinator" && !serve) {
    a.Add(absl::StrCat("--coordinator=", c.Coordinator()));
  }
  a.Add("--host=$(POD_IP)");
  // Clients dial servers by stable DNS names, which the job's certificate
  // names (CertificateNames in render.h), not by pod IPs no one knows in
  // advance: the coordinator by its Service, each pserver by its pod's name
  // under the headless Service (what it registers for trainers).
  if (component == "coordinator") {
    a.Add(absl::StrCat("--advertise=", c.name, "-coordinator"));
  }
  // On Kubernetes the launch is the job on its checkpoint claim: a
  // replacement coordinator pod resumes the rendezvous state kept there
  // (coordinator/coordinator.h), as replacement trainers resume from the
  // newest checkpoint on it. A job renamed, or a claim emptied, starts clean.
  if (component == "coordinator" && c.checkpoints.shared) {
    a.Add(absl::StrCat("--launch_id=", c.name));
  }
  if (component == "pserver") {
    a.Add(absl::StrCat("--advertise=$(POD_NAME).", c.name, "-pserver"));
  }
  if (component != "trainer") {
    a.Add(absl::StrCat("--port=", c.k8s.grpc_port()));
  }
  a.Add(absl::StrCat("--metrics_port=", c.k8s.metrics_port()));
  return a;
}

// Generates the synthetic data set into the trainer's working directory;
// the seed makes every rank's copy identical.
Yaml GenDataContainer(const Ctx& c) {
  const SyntheticDataConfig& s = c.job.data().synthetic();
  return Yaml::Map(
      {{"name", "gen-data"},
       {"image", c.k8s.image()},
       {"imagePullPolicy", c.k8s.image_pull_policy()},
       {"command", Yaml::List({"sampan"})},
       {"args",
        Yaml::List({"gen-data", "--out=data", absl::StrCat("--rows=", s.rows()),
                    absl::StrCat("--seed=", s.seed()),
                    absl::StrCat("--test_fraction=", s.test_fraction())})},
       {"workingDir", kWorkDir},
       {"volumeMounts",
        Yaml::List({Yaml::Map({{"name", "work"}, {"mountPath", kWorkDir}})})},
       {"securityContext", ContainerSecurity()}});
}

Yaml Volumes(const Ctx& c, const std::string& component, bool work_empty_dir) {
  Yaml v = Yaml::List(
      {Yaml::Map({{"name", "config"},
                  {"configMap",
                   Yaml::Map({{"name", absl::StrCat(c.name, "-config")}})}})});
  if (work_empty_dir) {
    v.Add(Yaml::Map({{"name", "work"}, {"emptyDir", Yaml::Map()}}));
  }
  if (!c.k8s.tls_secret().empty()) {
    v.Add(Yaml::Map({{"name", "tls"},
                     {"secret", Yaml::Map({{"secretName", c.k8s.tls_secret()},
                                           {"defaultMode", 0440}})}}));
  }
  if (c.checkpoints.shared) {
    v.Add(Yaml::Map({{"name", "checkpoints"},
                     {"persistentVolumeClaim",
                      Yaml::Map({{"claimName", c.checkpoints.claim}})}}));
  }
  if (component == "trainer" && !c.k8s.data_claim().empty()) {
    v.Add(Yaml::Map(
        {{"name", "data"},
         {"persistentVolumeClaim", Yaml::Map({{"claimName", c.k8s.data_claim()},
                                              {"readOnly", true}})}}));
  }
  return v;
}

}  // namespace

// A DNS-1123 label from the job name: lower case, [a-z0-9-], at most 40
// characters so that "<name>-coordinator" and pod suffixes stay under 63.
absl::StatusOr<std::string> DnsName(const std::string& name) {
  std::string out;
  for (char c : absl::AsciiStrToLower(name)) {
    const bool ok = absl::ascii_isalnum(static_cast<unsigned char>(c));
    if (ok || !out.empty()) out += ok ? c : '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > 40) out.resize(40);
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(out[0]))) {
    return absl::InvalidArgumentError(
        absl::StrCat("name: \"", name,
                     "\" does not make a Kubernetes name (it must start "
                     "with a letter)"));
  }
  return out;
}

// serving.shards > 1: lookup shards and predictor front ends.
bool Sharded(const Ctx& c) {
  return c.job.serving().enabled() && c.job.serving().shards() > 1;
}

Yaml Labels(const Ctx& c, const std::string& component) {
  return Yaml::Map({{"app.kubernetes.io/name", "sampan"},
                    {"app.kubernetes.io/instance", c.name},
                    {"app.kubernetes.io/component", component}});
}

Yaml Metadata(const Ctx& c, const std::string& name,
              const std::string& component) {
  Yaml m = Yaml::Map({{"name", name}});
  if (!c.k8s.namespace_().empty()) m.Set("namespace", c.k8s.namespace_());
  m.Set("labels", Labels(c, component));
  return m;
}

Yaml Container(const Ctx& c, const std::string& component,
               const ResourceConfig& resources,
               const std::string& work_volume) {
  const bool server = component != "trainer";
  Yaml k = Yaml::Map({{"name", component},
                      {"image", c.k8s.image()},
                      {"imagePullPolicy", c.k8s.image_pull_policy()},
                      {"command", Yaml::List({"sampan"})},
                      {"args", Args(c, component)},
                      {"workingDir", kWorkDir},
                      {"env", Env(c, component)},
                      {"ports", Ports(c, server)},
                      {"resources", Resources(resources)}});
  if (server) {
    k.Set("readinessProbe", GrpcProbe(c, 2, 3));
    k.Set("livenessProbe", GrpcProbe(c, 10, 6));
  }
  k.Set("volumeMounts", Mounts(c, component, work_volume));
  k.Set("securityContext", ContainerSecurity());
  return k;
}

Yaml PodTemplate(const Ctx& c, const std::string& component, Yaml container,
                 bool work_empty_dir) {
  Yaml annotations =
      Yaml::Map({{"prometheus.io/scrape", "true"},
                 {"prometheus.io/port", std::to_string(c.k8s.metrics_port())},
                 {"prometheus.io/path", "/metrics"}});
  // With the Secret, /metrics is HTTPS and wants the token (common/metrics.h).
  if (!c.k8s.tls_secret().empty()) {
    annotations.Set("prometheus.io/scheme", "https");
  }
  if (c.k8s.gang_scheduling()) {
    annotations.Set("scheduling.k8s.io/group-name", c.name);
  }
  Yaml spec = Yaml::Map();
  if (c.k8s.gang_scheduling()) spec.Set("schedulerName", "volcano");
  if (!c.k8s.service_account().empty()) {
    spec.Set("serviceAccountName", c.k8s.service_account());
  }
  spec.Set(
      "securityContext",
      Yaml::Map({{"runAsNonRoot", true},
                 {"runAsUser", kUid},
                 {"runAsGroup", kUid},
                 {"fsGroup", kUid},
                 {"seccompProfile", Yaml::Map({{"type", "RuntimeDefault"}})}}));
  if (component == "trainer") {
    spec.Set("restartPolicy", "Never");
    spec.Set("subdomain", absl::StrCat(c.name, "-trainer"));
    if (c.synthetic) {
      spec.Set("initContainers", Yaml::List({GenDataContainer(c)}));
    }
  }
  spec.Set("terminationGracePeriodSeconds", 30);
  spec.Set("containers", Yaml::List({std::move(container)}));
  spec.Set("volumes", Volumes(c, component, work_empty_dir));
  return Yaml::Map({{"metadata", Yaml::Map({{"labels", Labels(c, component)},
                                            {"annotations", annotations}})},
                    {"spec", spec}});
}

Yaml Selector(const Ctx& c, const std::string& component) {
  return Yaml::Map({{"matchLabels", Labels(c, component)}});
}

Yaml Service(const Ctx& c, const std::string& component, bool headless) {
  Yaml ports = Yaml::List();
  if (component != "trainer") {
    ports.Add(Yaml::Map({{"name", "grpc"},
                         {"port", c.k8s.grpc_port()},
                         {"targetPort", "grpc"}}));
  }
  ports.Add(Yaml::Map({{"name", "metrics"},
                       {"port", c.k8s.metrics_port()},
                       {"targetPort", "metrics"}}));
  Yaml spec = Yaml::Map();
  if (headless) {
    spec.Set("clusterIP", "None");
    // Pods are addressable while starting, so ranks can find each other.
    spec.Set("publishNotReadyAddresses", true);
  }
  spec.Set("selector", Labels(c, component));
  spec.Set("ports", ports);
  return Yaml::Map(
      {{"apiVersion", "v1"},
       {"kind", "Service"},
       {"metadata",
        Metadata(c, absl::StrCat(c.name, "-", component), component)},
       {"spec", spec}});
}

std::string Documents(std::initializer_list<Yaml> objects) {
  std::string out;
  for (const Yaml& o : objects) {
    if (!out.empty()) out += "---\n";
    out += o.Emit();
  }
  return out;
}

}  // namespace k8s
}  // namespace sampan
