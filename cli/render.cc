#include "cli/render.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cli/render_checkpoint.h"
#include "cli/render_yaml.h"
#include "coordinator/checkpoint_store.h"

namespace sampan {
namespace {

constexpr char kConfigDir[] = "/etc/sampan";
constexpr char kConfigPath[] = "/etc/sampan/job.yaml";
constexpr char kWorkDir[] = "/var/lib/sampan";
constexpr char kTlsDir[] = "/etc/sampan/tls";
constexpr int kUid = 10001;  // the Dockerfile's `sampan` user
// Exists while a predictor has a version loaded (serve --ready_file).
constexpr char kServingReady[] = "/var/lib/sampan/serving.ready";

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

// What every function below needs to know about the job.
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
  if (component != "trainer") {
    a.Add(absl::StrCat("--port=", c.k8s.grpc_port()));
  }
  a.Add(absl::StrCat("--metrics_port=", c.k8s.metrics_port()));
  return a;
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

Yaml PodTemplate(const Ctx& c, const std::string& component, Yaml container,
                 bool work_empty_dir) {
  Yaml annotations =
      Yaml::Map({{"prometheus.io/scrape", "true"},
                 {"prometheus.io/port", std::to_string(c.k8s.metrics_port())},
                 {"prometheus.io/path", "/metrics"}});
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

std::string CoordinatorObjects(const Ctx& c) {
  Yaml deployment = Yaml::Map(
      {{"apiVersion", "apps/v1"},
       {"kind", "Deployment"},
       {"metadata", Metadata(c, c.name + "-coordinator", "coordinator")},
       {"spec",
        Yaml::Map(
            {{"replicas", 1},
             // Never two coordinators: members would split between them.
             {"strategy", Yaml::Map({{"type", "Recreate"}})},
             {"selector", Selector(c, "coordinator")},
             {"template", PodTemplate(c, "coordinator",
                                      Container(c, "coordinator",
                                                c.k8s.coordinator(), "work"),
                                      true)}})}});
  return Documents({deployment, Service(c, "coordinator", false)});
}

// A StatefulSet of `replicas` pods of `component`, all started at once (each
// index owns fixed shards), each with a ReadWriteOnce volume of `storage`
// mounted as its working directory (the volume `volume`).
Yaml IndexedStatefulSet(const Ctx& c, const std::string& component,
                        uint32_t replicas, Yaml container,
                        const std::string& volume, const std::string& storage) {
  Yaml claim_spec = Yaml::Map(
      {{"accessModes", Yaml::List({"ReadWriteOnce"})},
       {"resources",
        Yaml::Map({{"requests", Yaml::Map({{"storage", storage}})}})}});
  if (!c.k8s.storage_class().empty()) {
    claim_spec.Set("storageClassName", c.k8s.storage_class());
  }
  const std::string name = absl::StrCat(c.name, "-", component);
  return Yaml::Map(
      {{"apiVersion", "apps/v1"},
       {"kind", "StatefulSet"},
       {"metadata", Metadata(c, name, component)},
       {"spec",
        Yaml::Map(
            {{"serviceName", name},
             {"replicas", replicas},
             {"podManagementPolicy", "Parallel"},
             {"selector", Selector(c, component)},
             {"template",
              PodTemplate(c, component, std::move(container), false)},
             {"volumeClaimTemplates",
              Yaml::List({Yaml::Map(
                  {{"metadata", Yaml::Map({{"name", volume},
                                           {"labels", Labels(c, component)}})},
                   {"spec", claim_spec}})})}})}});
}

std::string PserverObjects(const Ctx& c) {
  Yaml statefulset =
      IndexedStatefulSet(c, "pserver", c.job.cluster().num_pservers(),
                         Container(c, "pserver", c.k8s.pserver(), "tables"),
                         "tables", c.k8s.pserver_storage());
  return Documents({statefulset, Service(c, "pserver", true)});
}

std::string TrainerObjects(const Ctx& c) {
  const uint32_t n = c.job.cluster().num_trainers();
  Yaml job = Yaml::Map(
      {{"apiVersion", "batch/v1"},
       {"kind", "Job"},
       {"metadata", Metadata(c, c.name + "-trainer", "trainer")},
       {"spec",
        Yaml::Map({{"completionMode", "Indexed"},
                   {"completions", n},
                   {"parallelism", n},
                   {"backoffLimit", c.k8s.trainer_backoff_limit()},
                   {"template", PodTemplate(c, "trainer",
                                            Container(c, "trainer",
                                                      c.k8s.trainer(), "work"),
                                            true)}})}});
  return Documents({job, Service(c, "trainer", true)});
}

// serving.enabled: predictors that follow the job's versions on the shared
// volume. Ready once a version is loaded (the file `serve --ready_file`
// creates only then: the kubelet's gRPC probe cannot speak TLS); alive while
// the port answers, so a job that has published nothing yet is not
// restarted.
// The probes of predictors and lookup shards.
void SetServingProbes(const Ctx& c, Yaml* container) {
  container->Set(
      "readinessProbe",
      Yaml::Map(
          {{"exec", Yaml::Map({{"command",
                                Yaml::List({"test", "-e", kServingReady})}})},
           {"initialDelaySeconds", 2},
           {"periodSeconds", 5},
           {"failureThreshold", 2}}));
  container->Set(
      "livenessProbe",
      Yaml::Map({{"tcpSocket", Yaml::Map({{"port", c.k8s.grpc_port()}})},
                 {"initialDelaySeconds", 10},
                 {"periodSeconds", 10},
                 {"failureThreshold", 6}}));
}

// serving.shards > 1: lookup shard i holds the rows of its training shards
// in a RocksDB store on its own volume (under the work directory) and
// answers the predictors' Lookup calls; the predictors find shard i at
// <name>-lookup-<i>.<name>-lookup (the rendered job's
// serving.shard_addresses), a stable DNS name for the certificate.
std::string LookupObjects(const Ctx& c) {
  Yaml container = Container(c, "lookup", c.k8s.lookup(), "store");
  SetServingProbes(c, &container);
  Yaml statefulset =
      IndexedStatefulSet(c, "lookup", c.job.serving().shards(),
                         std::move(container), "store", c.k8s.lookup_storage());
  // A shard's rows are served by it alone: one down at a time.
  Yaml budget =
      Yaml::Map({{"apiVersion", "policy/v1"},
                 {"kind", "PodDisruptionBudget"},
                 {"metadata", Metadata(c, c.name + "-lookup", "lookup")},
                 {"spec", Yaml::Map({{"maxUnavailable", 1},
                                     {"selector", Selector(c, "lookup")}})}});
  return Documents({statefulset, Service(c, "lookup", true), budget});
}

std::string ServingObjects(const Ctx& c) {
  Yaml container = Container(c, "serving", c.k8s.serving(), "work");
  SetServingProbes(c, &container);
  Yaml deployment = Yaml::Map(
      {{"apiVersion", "apps/v1"},
       {"kind", "Deployment"},
       {"metadata", Metadata(c, c.name + "-serving", "serving")},
       {"spec",
        Yaml::Map({{"replicas", c.k8s.serving_replicas()},
                   {"selector", Selector(c, "serving")},
                   {"template",
                    PodTemplate(c, "serving", std::move(container), true)}})}});
  // Keep all but one predictor up through node drains.
  Yaml budget =
      Yaml::Map({{"apiVersion", "policy/v1"},
                 {"kind", "PodDisruptionBudget"},
                 {"metadata", Metadata(c, c.name + "-serving", "serving")},
                 {"spec", Yaml::Map({{"maxUnavailable", 1},
                                     {"selector", Selector(c, "serving")}})}});
  std::string out =
      Documents({deployment, Service(c, "serving", false), budget});
  if (Sharded(c)) out += "---\n" + LookupObjects(c);
  return out;
}

std::string PolicyObjects(const Ctx& c) {
  // Losing a pserver (memory tables) or the coordinator loses the job, so
  // voluntary evictions wait until it has finished.
  Yaml selector = Yaml::Map(
      {{"matchLabels", Yaml::Map({{"app.kubernetes.io/instance", c.name}})},
       {"matchExpressions",
        Yaml::List({Yaml::Map(
            {{"key", "app.kubernetes.io/component"},
             {"operator", "In"},
             {"values", Yaml::List({"coordinator", "pserver"})}})})}});
  return Yaml::Map({{"apiVersion", "policy/v1"},
                    {"kind", "PodDisruptionBudget"},
                    {"metadata", Metadata(c, c.name + "-servers", "servers")},
                    {"spec", Yaml::Map({{"maxUnavailable", 0},
                                        {"selector", selector}})}})
      .Emit();
}

std::string MonitoringObjects(const Ctx& c) {
  return Yaml::Map(
             {{"apiVersion", "monitoring.coreos.com/v1"},
              {"kind", "ServiceMonitor"},
              {"metadata", Metadata(c, c.name, "monitoring")},
              {"spec",
               Yaml::Map({{"selector",
                           Yaml::Map({{"matchLabels",
                                       Yaml::Map({{"app.kubernetes.io/instance",
                                                   c.name}})}})},
                          {"endpoints",
                           Yaml::List({Yaml::Map({{"port", "metrics"},
                                                  {"path", "/metrics"},
                                                  {"interval", "15s"}})})}})}})
      .Emit();
}

std::string PodGroupObject(const Ctx& c) {
  const uint32_t members =
      1 + c.job.cluster().num_pservers() + c.job.cluster().num_trainers();
  return Yaml::Map({{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                    {"kind", "PodGroup"},
                    {"metadata", Metadata(c, c.name, "podgroup")},
                    {"spec", Yaml::Map({{"minMember", members}})}})
      .Emit();
}

// The shared ReadWriteMany volume for checkpoints, when render creates it.
std::string CheckpointClaimObject(const Ctx& c) {
  return Yaml::Map(
             {{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"metadata", Metadata(c, c.checkpoints.claim, "checkpoints")},
              {"spec", CheckpointClaimSpec(c.k8s)}})
      .Emit();
}

std::string Kustomization(const Ctx& c) {
  Yaml resources =
      Yaml::List({"coordinator.yaml", "pserver.yaml", "trainer.yaml",
                  "policy.yaml", "monitoring.yaml"});
  if (c.k8s.gang_scheduling()) resources.Add("podgroup.yaml");
  if (c.checkpoints.render_claim) resources.Add("checkpoints.yaml");
  if (c.job.serving().enabled()) resources.Add("serving.yaml");
  Yaml k = Yaml::Map({{"apiVersion", "kustomize.config.k8s.io/v1beta1"},
                      {"kind", "Kustomization"}});
  if (!c.k8s.namespace_().empty()) k.Set("namespace", c.k8s.namespace_());
  k.Set("resources", resources);
  // Generated, so a changed job.yaml gets a new name and rolls the pods.
  k.Set("configMapGenerator",
        Yaml::List({Yaml::Map(
            {{"name", c.name + "-config"},
             {"files", Yaml::List({"job.yaml"})},
             {"options", Yaml::Map({{"labels", Labels(c, "config")}})}})}));
  return "# Generated by `sampan render --target k8s`; edit the job config or\n"
         "# add an overlay instead of editing these files.\n" +
         k.Emit();
}

}  // namespace

std::string JobToYaml(const JobConfig& job) {
  return MessageToYaml(job).Emit();
}

JobConfig KubernetesJobConfig(const JobConfig& job) {
  JobConfig out = job;
  // Relative to the working directory, /var/lib/sampan: the pod's volume.
  out.set_output_dir(".");
  out.mutable_cluster()->set_coordinator_port(job.kubernetes().grpc_port());
  // On the shared volume every pod mounts (RenderKubernetes insists on
  // one), in a directory of the job's own: jobs may share a claim.
  absl::StatusOr<std::string> name = DnsName(job.name());
  const std::string shared =
      name.ok() ? absl::StrCat(kCheckpointMount, "/", *name) : kCheckpointMount;
  if (TakesCheckpoints(job)) out.mutable_checkpoint()->set_dir(shared);
  // Every trainer writes its part of a version there, and predictors read.
  if (!job.data().stream().root().empty()) {
    out.mutable_data()->mutable_stream()->set_versions_dir(shared +
                                                           "/versions");
  }
  // Predictors reach lookup shard i by its StatefulSet pod's DNS name.
  if (job.serving().enabled() && job.serving().shards() > 1 && name.ok()) {
    ServingConfig* s = out.mutable_serving();
    s->clear_shard_addresses();
    for (uint32_t i = 0; i < job.serving().shards(); ++i) {
      s->add_shard_addresses(
          absl::StrCat(*name, "-lookup-", i, ".", *name,
                       "-lookup:", job.kubernetes().grpc_port()));
    }
  }
  if (!job.kubernetes().tls_secret().empty()) {
    // The Secret's files, mounted at kTlsDir (see Volumes).
    SecurityConfig* security = out.mutable_cluster()->mutable_security();
    security->set_tls_cert_file(absl::StrCat(kTlsDir, "/tls.crt"));
    security->set_tls_key_file(absl::StrCat(kTlsDir, "/tls.key"));
    security->set_tls_ca_file(absl::StrCat(kTlsDir, "/ca.crt"));
    security->set_token_file(absl::StrCat(kTlsDir, "/token"));
  }
  if (job.data().synthetic().rows() > 0) {
    DataConfig* data = out.mutable_data();
    data->mutable_synthetic()->set_rows(0);
    data->clear_train_files();
    data->clear_test_files();
    data->add_train_files("data/train.tsv");
    data->add_test_files("data/test.tsv");
  }
  return out;
}

absl::StatusOr<std::vector<RenderedFile>> RenderKubernetes(
    const JobConfig& job) {
  absl::StatusOr<std::string> name = DnsName(job.name());
  if (!name.ok()) return name.status();
  // A warm start from a checkpoint copies its pserver snapshots into each
  // pserver's data directory before the pservers start: `sampan run` does,
  // no rendered object does yet, and pservers starting empty would train
  // the job cold without a word.
  if (!job.init_model().empty() && IsCheckpointPath(job.init_model())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "init_model: ", job.init_model(),
        " is a checkpoint; on Kubernetes warm start from a model version "
        "(a versions root or v-NNNNNN) instead: copying a checkpoint's "
        "snapshots into the pservers' volumes is `sampan run`'s only"));
  }
  absl::StatusOr<CheckpointVolume> checkpoints =
      ResolveCheckpointVolume(job, *name);
  if (!checkpoints.ok()) return checkpoints.status();
  const Ctx c{job, job.kubernetes(), *name, job.data().synthetic().rows() > 0,
              *checkpoints};
  std::vector<RenderedFile> files = {
      {"kustomization.yaml", Kustomization(c)},
      {"job.yaml", "# The job as the pods read it (sampan render).\n" +
                       JobToYaml(KubernetesJobConfig(job))},
      {"coordinator.yaml", CoordinatorObjects(c)},
      {"pserver.yaml", PserverObjects(c)},
      {"trainer.yaml", TrainerObjects(c)},
      {"policy.yaml", PolicyObjects(c)},
      {"monitoring.yaml", MonitoringObjects(c)},
  };
  if (c.k8s.gang_scheduling()) {
    files.push_back({"podgroup.yaml", PodGroupObject(c)});
  }
  if (c.checkpoints.render_claim) {
    files.push_back({"checkpoints.yaml", CheckpointClaimObject(c)});
  }
  if (job.serving().enabled()) {
    files.push_back({"serving.yaml", ServingObjects(c)});
  }
  return files;
}

absl::Status WriteRendered(const std::string& dir,
                           const std::vector<RenderedFile>& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  for (const RenderedFile& f : files) {
    const std::string path = absl::StrCat(dir, "/", f.name);
    std::ofstream out(path, std::ios::trunc);
    out << f.text;
    out.close();
    if (!out) return absl::DataLossError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

}  // namespace sampan
