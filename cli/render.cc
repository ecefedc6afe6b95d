#include "cli/render.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cli/render_checkpoint.h"
#include "cli/render_pod.h"
#include "cli/render_yaml.h"
#include "common/security.h"
#include "coordinator/checkpoint_store.h"

namespace sampan {
namespace {

using k8s::Container;
using k8s::Ctx;
using k8s::DnsName;
using k8s::Documents;
using k8s::kServingReady;
using k8s::kTlsDir;
using k8s::Labels;
using k8s::Metadata;
using k8s::PodTemplate;
using k8s::Selector;
using k8s::Service;
using k8s::Sharded;

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

// The probes of predictors and lookup shards: ready once a version is
// loaded (the file `serve --ready_file` creates only then: the kubelet's
// gRPC probe cannot speak TLS); alive while the port answers, so a job that
// has published nothing yet is not restarted.
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

// serving.enabled: predictors that follow the job's versions on the shared
// volume (and with serving.shards > 1 the lookup shards they gather from).
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

// The name a scrape checks every pod's certificate against: Prometheus
// dials pod IPs, and all pods of a job share one certificate.
std::string MetricsTlsName(const std::string& name) {
  return name + "-metrics";
}

std::string MonitoringObjects(const Ctx& c) {
  Yaml endpoint = Yaml::Map(
      {{"port", "metrics"}, {"path", "/metrics"}, {"interval", "15s"}});
  // A secured job serves /metrics over TLS to scrapes with its token
  // (common/metrics.h): both come from the job's Secret.
  if (!c.k8s.tls_secret().empty()) {
    auto key = [&](const char* k) {
      return Yaml::Map({{"name", c.k8s.tls_secret()}, {"key", k}});
    };
    endpoint.Set("scheme", "https");
    endpoint.Set("tlsConfig",
                 Yaml::Map({{"ca", Yaml::Map({{"secret", key("ca.crt")}})},
                            {"serverName", MetricsTlsName(c.name)}}));
    endpoint.Set("authorization", Yaml::Map({{"type", "Bearer"},
                                             {"credentials", key("token")}}));
  }
  return Yaml::Map(
             {{"apiVersion", "monitoring.coreos.com/v1"},
              {"kind", "ServiceMonitor"},
              {"metadata", Metadata(c, c.name, "monitoring")},
              {"spec",
               Yaml::Map({{"selector",
                           Yaml::Map({{"matchLabels",
                                       Yaml::Map({{"app.kubernetes.io/instance",
                                                   c.name}})}})},
                          {"endpoints", Yaml::List({endpoint})}})}})
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

absl::StatusOr<std::vector<std::string>> CertificateNames(
    const JobConfig& job) {
  absl::StatusOr<std::string> name = DnsName(job.name());
  if (!name.ok()) return name.status();
  const std::string& n = *name;
  std::vector<std::string> names = {n + "-coordinator"};
  for (uint32_t i = 0; i < job.cluster().num_pservers(); ++i) {
    names.push_back(absl::StrCat(n, "-pserver-", i, ".", n, "-pserver"));
  }
  std::vector<std::string> services = {"coordinator"};
  std::vector<std::string> headless = {"pserver"};
  if (job.serving().enabled()) {
    names.push_back(n + "-serving");
    services.push_back("serving");
    if (job.serving().shards() > 1) {
      for (uint32_t i = 0; i < job.serving().shards(); ++i) {
        names.push_back(absl::StrCat(n, "-lookup-", i, ".", n, "-lookup"));
      }
      headless.push_back("lookup");
    }
  }
  names.push_back(MetricsTlsName(n));
  // Longer forms for clients in other namespaces. gRPC takes a wildcard
  // only for a parent domain with a dot in it, so the short pod names
  // above are listed one by one.
  const std::string& ns = job.kubernetes().namespace_();
  if (!ns.empty()) {
    for (const std::string& s : services) {
      const std::string svc = absl::StrCat(n, "-", s, ".", ns);
      names.insert(names.end(),
                   {svc, svc + ".svc", svc + ".svc.cluster.local"});
    }
    for (const std::string& s : headless) {
      const std::string svc = absl::StrCat("*.", n, "-", s, ".", ns, ".svc");
      names.insert(names.end(), {svc, svc + ".cluster.local"});
    }
  }
  names.push_back("localhost");
  return names;
}

absl::StatusOr<std::vector<RenderedFile>> RenderKubernetes(
    const JobConfig& job) {
  absl::StatusOr<std::string> name = DnsName(job.name());
  if (!name.ok()) return name.status();
  // Every pod listens on its pod IP, where servers (and /metrics) refuse to
  // start without TLS and a token unless the job is `insecure`
  // (common/security.h): refuse the job rather than render pods that exit.
  if (absl::Status s = CheckListenPolicy(
          SecurityOptionsFromJob(KubernetesJobConfig(job)), "$(POD_IP)");
      !s.ok()) {
    const std::string why =
        absl::IsFailedPrecondition(s)
            ? "pods listen on their pod IPs, where Sampan's servers refuse to "
              "start without TLS and a token"
            : std::string(s.message());
    return absl::InvalidArgumentError(absl::StrCat(
        "kubernetes.tls_secret is not set, and ", why,
        ": set kubernetes.tls_secret to a Secret with tls.crt, tls.key, "
        "ca.crt and token (scripts/make-certs.sh JOB.yaml DIR makes them), "
        "or cluster.security.insecure: true for plaintext without "
        "authentication"));
  }
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
