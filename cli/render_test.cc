#include "cli/render.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/render_checkpoint.h"
#include "cli/render_yaml.h"
#include "common/config.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace sampan {
namespace {

JobConfig Job(const std::string& yaml) {
  absl::StatusOr<JobConfig> job = ParseJobConfig(yaml, "test.yaml");
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : DefaultJobConfig();
}

std::map<std::string, std::string> Render(const JobConfig& job) {
  absl::StatusOr<std::vector<RenderedFile>> files = RenderKubernetes(job);
  EXPECT_TRUE(files.ok()) << files.status();
  std::map<std::string, std::string> out;
  if (files.ok()) {
    for (const RenderedFile& f : *files) out[f.name] = f.text;
  }
  return out;
}

TEST(YamlTest, QuotesStringsThatWouldReadAsOtherTypes) {
  Yaml y = Yaml::Map({{"a", "true"},
                      {"b", "9090"},
                      {"c", "plain-text"},
                      {"d", ""},
                      {"e", 7},
                      {"f", false},
                      {"g", "$(POD_IP)"},
                      {"h", Yaml::List()}});
  EXPECT_EQ(y.Emit(),
            "a: \"true\"\nb: \"9090\"\nc: plain-text\nd: \"\"\ne: 7\n"
            "f: false\ng: \"$(POD_IP)\"\nh: []\n");
}

TEST(YamlTest, NestedListsOfMapsParseBack) {
  Yaml y = Yaml::Map(
      {{"items", Yaml::List({Yaml::Map({{"name", "x"}, {"port", 1}}),
                             Yaml::Map({{"name", "y"},
                                        {"sub", Yaml::List({"a", "b"})}})})}});
  YAML::Node n = YAML::Load(y.Emit());
  ASSERT_EQ(n["items"].size(), 2u);
  EXPECT_EQ(n["items"][0]["port"].as<int>(), 1);
  EXPECT_EQ(n["items"][1]["sub"][1].as<std::string>(), "b");
}

TEST(RenderTest, JobYamlRoundTripsThroughTheLoader) {
  JobConfig job =
      Job("name: rt\nmodel: {type: DEEPFM, hidden: [64, 32]}\n"
          "table: {optimizer: {type: FTRL, learning_rate: 0.03}}\n");
  absl::StatusOr<JobConfig> back = ParseJobConfig(JobToYaml(job), "rt.yaml");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << JobToYaml(job);
  std::string diff;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  // An empty submessage written out reads back as present-but-default.
  differencer.set_message_field_comparison(
      google::protobuf::util::MessageDifferencer::EQUIVALENT);
  EXPECT_TRUE(differencer.Compare(job, *back)) << diff;
}

TEST(RenderTest, KubernetesConfigIsRelativeAndGeneratesSyntheticData) {
  JobConfig k = KubernetesJobConfig(Job("name: x\n"));
  EXPECT_EQ(k.output_dir(), ".");
  EXPECT_EQ(k.data().synthetic().rows(), 0u);
  ASSERT_EQ(k.data().train_files_size(), 1);
  EXPECT_EQ(k.data().train_files(0), "data/train.tsv");
  EXPECT_TRUE(ValidateJobConfig(k).ok());
}

TEST(RenderTest, ObjectsCarrySizesResourcesAndFlags) {
  auto files = Render(Job(R"(name: My_Job
cluster: {num_pservers: 3, num_trainers: 4, security: {insecure: true}}
kubernetes:
  image: registry.example/sampan:1.2
  pserver: {cpu_request: "2", memory_limit: 8Gi}
  trainer: {gpus: 1}
  pserver_storage: 50Gi
  trainer_backoff_limit: 5
)"));
  ASSERT_EQ(files.count("kustomization.yaml"), 1u);
  EXPECT_EQ(files.count("podgroup.yaml"), 0u);
  YAML::Node ps = YAML::LoadAll(files["pserver.yaml"])[0];
  EXPECT_EQ(ps["kind"].as<std::string>(), "StatefulSet");
  EXPECT_EQ(ps["metadata"]["name"].as<std::string>(), "my-job-pserver");
  EXPECT_EQ(ps["spec"]["replicas"].as<int>(), 3);
  YAML::Node c = ps["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["image"].as<std::string>(), "registry.example/sampan:1.2");
  EXPECT_EQ(c["resources"]["requests"]["cpu"].as<std::string>(), "2");
  EXPECT_EQ(c["resources"]["limits"]["memory"].as<std::string>(), "8Gi");
  EXPECT_EQ(c["readinessProbe"]["grpc"]["port"].as<int>(), 7000);
  EXPECT_EQ(c["args"][2].as<std::string>(), "--index=$(SAMPAN_INDEX)");
  EXPECT_EQ(c["args"][3].as<std::string>(),
            "--coordinator=my-job-coordinator:7000");
  EXPECT_EQ(ps["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]
              ["requests"]["storage"]
                  .as<std::string>(),
            "50Gi");
  YAML::Node job = YAML::LoadAll(files["trainer.yaml"])[0];
  EXPECT_EQ(job["spec"]["completionMode"].as<std::string>(), "Indexed");
  EXPECT_EQ(job["spec"]["completions"].as<int>(), 4);
  EXPECT_EQ(job["spec"]["backoffLimit"].as<int>(), 5);
  YAML::Node t = job["spec"]["template"]["spec"];
  EXPECT_EQ(
      t["containers"][0]["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 1);
  EXPECT_EQ(t["initContainers"][0]["args"][0].as<std::string>(), "gen-data");
  EXPECT_EQ(
      job["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"]
          .as<std::string>(),
      "9090");
}

TEST(RenderTest, GangSchedulingAndTlsAreOptIn) {
  auto files = Render(
      Job("name: g\nkubernetes: {gang_scheduling: true, tls_secret: g-tls}\n"));
  ASSERT_EQ(files.count("podgroup.yaml"), 1u);
  EXPECT_EQ(YAML::Load(files["podgroup.yaml"])["spec"]["minMember"].as<int>(),
            5);
  YAML::Node dep = YAML::LoadAll(files["coordinator.yaml"])[0];
  YAML::Node pod = dep["spec"]["template"]["spec"];
  EXPECT_EQ(pod["schedulerName"].as<std::string>(), "volcano");
  EXPECT_TRUE(pod["containers"][0]["readinessProbe"]["tcpSocket"]);
  EXPECT_NE(files["job.yaml"].find("/etc/sampan/tls/tls.crt"),
            std::string::npos);
}

// Pods listen on their IPs, where servers refuse plaintext or token-less
// serving unless the job is `insecure`: render refuses such a job (exit 2
// in `sampan render`) rather than render pods that exit at start.
TEST(RenderTest, PodsThatWouldRefuseToListenAreRefused) {
  absl::StatusOr<std::vector<RenderedFile>> open =
      RenderKubernetes(Job("name: p\n"));
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(open.status().message()),
              testing::AllOf(testing::HasSubstr("kubernetes.tls_secret"),
                             testing::HasSubstr("cluster.security.insecure"),
                             testing::HasSubstr("scripts/make-certs.sh")));
  // TLS without a token is refused by the servers too.
  EXPECT_FALSE(RenderKubernetes(Job("name: p\ncluster: {security: "
                                    "{tls_cert_file: c, tls_key_file: k}}\n"))
                   .ok());
  // A token without TLS would travel in plaintext.
  absl::StatusOr<std::vector<RenderedFile>> token = RenderKubernetes(
      Job("name: p\ncluster: {security: {token_file: t, insecure: true}}\n"));
  ASSERT_FALSE(token.ok());
  EXPECT_THAT(std::string(token.status().message()),
              testing::HasSubstr("token_file needs TLS"));
  EXPECT_TRUE(
      RenderKubernetes(Job("name: p\nkubernetes: {tls_secret: s}\n")).ok());
  EXPECT_TRUE(
      RenderKubernetes(Job("name: p\ncluster: {security: {insecure: true}}\n"))
          .ok());
}

// "host" of "host:port".
std::string Host(const std::string& address) {
  return address.substr(0, address.rfind(':'));
}

// Every name a client dials a server by, and the name the ServiceMonitor
// checks scraped pods against, is one the job's certificate must carry.
TEST(RenderTest, ServersAdvertiseNamesTheCertificateCarries) {
  const JobConfig job = Job(R"(name: Names
cluster: {num_pservers: 3}
data: {synthetic: {rows: 0}, stream: {root: /data/x}}
serving: {enabled: true, shards: 2}
kubernetes: {tls_secret: names-tls, checkpoint_storage: 1Gi, namespace: team}
)");
  absl::StatusOr<std::vector<std::string>> names = CertificateNames(job);
  ASSERT_TRUE(names.ok()) << names.status();
  auto files = Render(job);
  std::vector<std::string> dialed;
  std::map<std::string, std::string> advertised;  // file -> --advertise
  for (const char* f :
       {"coordinator.yaml", "pserver.yaml", "trainer.yaml", "serving.yaml"}) {
    for (const YAML::Node& o : YAML::LoadAll(files[f])) {
      if (!o["spec"]["template"]) continue;
      for (const YAML::Node& a :
           o["spec"]["template"]["spec"]["containers"][0]["args"]) {
        const std::string arg = a.as<std::string>();
        if (arg.rfind("--coordinator=", 0) == 0) {
          dialed.push_back(Host(arg.substr(14)));
        }
        if (arg.rfind("--advertise=", 0) == 0) advertised[f] = arg.substr(12);
      }
    }
  }
  EXPECT_EQ(advertised["coordinator.yaml"], "names-coordinator");
  // $(POD_NAME) of StatefulSet pod i is names-pserver-i.
  ASSERT_EQ(advertised["pserver.yaml"], "$(POD_NAME).names-pserver");
  for (int i = 0; i < 3; ++i) {
    dialed.push_back(absl::StrCat("names-pserver-", i, ".names-pserver"));
  }
  dialed.push_back(advertised["coordinator.yaml"]);
  absl::StatusOr<JobConfig> pods = ParseJobConfig(files["job.yaml"], "j");
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->serving().shard_addresses_size(), 2);
  for (const std::string& a : pods->serving().shard_addresses()) {
    dialed.push_back(Host(a));
  }
  YAML::Node monitor = YAML::Load(files["monitoring.yaml"]);
  YAML::Node endpoint = monitor["spec"]["endpoints"][0];
  EXPECT_EQ(endpoint["scheme"].as<std::string>(), "https");
  dialed.push_back(endpoint["tlsConfig"]["serverName"].as<std::string>());
  for (const std::string& d : dialed) {
    EXPECT_THAT(*names, testing::Contains(d)) << d;
  }
  EXPECT_THAT(*names, testing::Contains("names-serving.team.svc"));
  EXPECT_THAT(*names, testing::Contains("*.names-pserver.team.svc"));
  EXPECT_THAT(*names, testing::Contains("localhost"));
  // The scrape's CA and token come from the job's Secret.
  EXPECT_EQ(endpoint["tlsConfig"]["ca"]["secret"]["name"].as<std::string>(),
            "names-tls");
  EXPECT_EQ(endpoint["tlsConfig"]["ca"]["secret"]["key"].as<std::string>(),
            "ca.crt");
  EXPECT_EQ(endpoint["authorization"]["type"].as<std::string>(), "Bearer");
  EXPECT_EQ(endpoint["authorization"]["credentials"]["key"].as<std::string>(),
            "token");
}

TEST(RenderTest, InsecureJobIsScrapedInPlaintext) {
  auto files =
      Render(Job("name: open\ncluster: {security: {insecure: true}}\n"));
  YAML::Node endpoint =
      YAML::Load(files["monitoring.yaml"])["spec"]["endpoints"][0];
  EXPECT_FALSE(endpoint["scheme"]);
  EXPECT_FALSE(endpoint["authorization"]);
}

TEST(RenderTest, RejectsNamesThatCannotBeDnsLabels) {
  EXPECT_FALSE(RenderKubernetes(Job("name: \"123\"\n")).ok());
}

// A warm start from a checkpoint needs the snapshots copied in first, which
// no rendered object does.
TEST(RenderTest, RefusesWarmStartFromACheckpoint) {
  const std::string ckpt =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/ckpts/ckpt-1");
  std::filesystem::create_directories(ckpt);
  std::ofstream(ckpt + "/MANIFEST") << "";
  absl::StatusOr<std::vector<RenderedFile>> warm =
      RenderKubernetes(Job(absl::StrCat(
          "init_model: ", ckpt, "\ncluster: {security: {insecure: true}}\n")));
  ASSERT_FALSE(warm.ok());
  EXPECT_THAT(std::string(warm.status().message()),
              testing::HasSubstr("is a checkpoint; on Kubernetes warm start"));
}

constexpr char kCheckpointing[] = R"(name: ck
cluster: {security: {insecure: true}}
table: {backend: ROCKSDB}
checkpoint: {every_steps: 50}
)";

// The pod spec of each workload, by file.
std::map<std::string, YAML::Node> PodSpecs(
    std::map<std::string, std::string>& files) {
  std::map<std::string, YAML::Node> out;
  for (const char* f : {"coordinator.yaml", "pserver.yaml", "trainer.yaml"}) {
    out[f] = YAML::LoadAll(files[f])[0]["spec"]["template"]["spec"];
  }
  return out;
}

// The claim name mounted at the checkpoint path in `pod`, or "".
std::string CheckpointClaimIn(const YAML::Node& pod) {
  std::string volume;
  for (const YAML::Node& m : pod["containers"][0]["volumeMounts"]) {
    if (m["mountPath"].as<std::string>() == kCheckpointMount) {
      volume = m["name"].as<std::string>();
    }
  }
  for (const YAML::Node& v : pod["volumes"]) {
    if (!volume.empty() && v["name"].as<std::string>() == volume) {
      return v["persistentVolumeClaim"]["claimName"].as<std::string>();
    }
  }
  return "";
}

TEST(RenderTest, CheckpointingJobSharesOneReadWriteManyClaim) {
  auto files = Render(Job(std::string(kCheckpointing) +
                          "kubernetes: {checkpoint_storage: 20Gi, "
                          "checkpoint_storage_class: nfs}\n"));
  ASSERT_EQ(files.count("checkpoints.yaml"), 1u);
  YAML::Node claim = YAML::Load(files["checkpoints.yaml"]);
  EXPECT_EQ(claim["kind"].as<std::string>(), "PersistentVolumeClaim");
  EXPECT_EQ(claim["metadata"]["name"].as<std::string>(), "ck-checkpoints");
  EXPECT_EQ(claim["spec"]["accessModes"][0].as<std::string>(), "ReadWriteMany");
  EXPECT_EQ(claim["spec"]["resources"]["requests"]["storage"].as<std::string>(),
            "20Gi");
  EXPECT_EQ(claim["spec"]["storageClassName"].as<std::string>(), "nfs");
  EXPECT_NE(files["kustomization.yaml"].find("- checkpoints.yaml"),
            std::string::npos);
  for (const auto& [file, pod] : PodSpecs(files)) {
    EXPECT_EQ(CheckpointClaimIn(pod), "ck-checkpoints") << file;
  }
  YAML::Node args = PodSpecs(files)["trainer.yaml"]["containers"][0]["args"];
  EXPECT_EQ(args[3].as<std::string>(), "--checkpoint=latest");
  // A replacement coordinator pod resumes the job's rendezvous state from
  // the claim: one launch id for the job.
  bool launch_id = false;
  for (const YAML::Node& arg :
       PodSpecs(files)["coordinator.yaml"]["containers"][0]["args"]) {
    launch_id = launch_id || arg.as<std::string>() == "--launch_id=ck";
  }
  EXPECT_TRUE(launch_id);
  // The pods read checkpoint.dir from the ConfigMap: the mount.
  absl::StatusOr<JobConfig> rendered = ParseJobConfig(files["job.yaml"], "j");
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  EXPECT_EQ(rendered->checkpoint().dir(),
            std::string(kCheckpointMount) + "/ck");
}

TEST(RenderTest, CheckpointingJobCanUseAnExistingClaim) {
  auto files = Render(Job(std::string(kCheckpointing) +
                          "kubernetes: {checkpoint_claim: team-ckpt}\n"));
  EXPECT_EQ(files.count("checkpoints.yaml"), 0u);
  EXPECT_EQ(files["kustomization.yaml"].find("checkpoints.yaml"),
            std::string::npos);
  for (const auto& [file, pod] : PodSpecs(files)) {
    EXPECT_EQ(CheckpointClaimIn(pod), "team-ckpt") << file;
  }
}

TEST(RenderTest, NoCheckpointsNoSharedClaim) {
  // Fields set but no checkpoint: nothing to share.
  auto files =
      Render(Job("name: nock\ncluster: {security: {insecure: true}}\n"
                 "kubernetes: {checkpoint_claim: c}\n"));
  EXPECT_EQ(files.count("checkpoints.yaml"), 0u);
  for (const auto& [file, pod] : PodSpecs(files)) {
    EXPECT_EQ(CheckpointClaimIn(pod), "") << file;
    for (const YAML::Node& a : pod["containers"][0]["args"]) {
      EXPECT_EQ(a.as<std::string>().find("--checkpoint"), std::string::npos);
    }
  }
  EXPECT_EQ(
      YAML::Load(files["job.yaml"])["checkpoint"]["dir"].as<std::string>(), "");
}

TEST(RenderTest, CheckpointingJobWithoutSharedStorageIsRefused) {
  absl::StatusOr<std::vector<RenderedFile>> none =
      RenderKubernetes(Job(kCheckpointing));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("kubernetes.checkpoint_claim or "
                                         "kubernetes.checkpoint_storage"),
            std::string::npos)
      << none.status();
  absl::StatusOr<std::vector<RenderedFile>> both = RenderKubernetes(
      Job(std::string(kCheckpointing) +
          "kubernetes: {checkpoint_claim: x, checkpoint_storage: 1Gi}\n"));
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("not both"), std::string::npos)
      << both.status();
  // A size that is not a quantity fails validation, naming the field.
  absl::StatusOr<JobConfig> bad = ParseJobConfig(
      "name: b\nkubernetes: {checkpoint_storage: lots}\n", "b.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("kubernetes.checkpoint_storage"),
            std::string::npos)
      << bad.status();
}

TEST(RenderTest, SameConfigSameBytes) {
  const JobConfig job = Job("name: same\nkubernetes: {tls_secret: t}\n");
  EXPECT_EQ(Render(job), Render(job));
}

}  // namespace
}  // namespace sampan
