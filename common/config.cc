#include "common/config.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/yaml_proto.h"
#include "yaml-cpp/yaml.h"

namespace sampan {
namespace {

absl::Status SyntaxError(absl::string_view source, const YAML::Exception& e) {
  return absl::InvalidArgumentError(
      absl::StrCat(source, ":", YamlLine(e.mark), ": invalid YAML: ", e.msg));
}

absl::Status CannotRead(const std::string& path) {
  return absl::NotFoundError(absl::StrCat("cannot read job config ", path, ": ",
                                          std::strerror(errno)));
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return CannotRead(path);
  // A directory opens fine, and libstdc++ throws on the failed read.
  try {
    return std::string(std::istreambuf_iterator<char>(in), {});
  } catch (const std::exception&) {
    return CannotRead(path);
  }
}

// A multi-epoch CTR batch job that does not say otherwise stops early on a
// validation slice: more epochs must never make the model worse than fewer.
// (Word vectors have no AUC; a stream trains each pass once.)
void DefaultValidationSlice(const YAML::Node& root, JobConfig* config) {
  const YAML::Node data = root["data"];
  if (data && data.IsMap() && data["validation_fraction"]) return;
  DataConfig* d = config->mutable_data();
  if (d->epochs() <= 1 || config->model().type() == WORD2VEC ||
      !d->stream().root().empty()) {
    return;
  }
  d->set_validation_fraction(kDefaultValidationFraction);
}

}  // namespace

JobConfig DefaultJobConfig() {
  JobConfig config;
  config.set_name("sampan-job");
  ClusterConfig* cluster = config.mutable_cluster();
  cluster->set_num_pservers(2);
  cluster->set_num_trainers(2);
  cluster->set_threads_per_trainer(2);
  cluster->set_host("127.0.0.1");
  cluster->set_coordinator_port(0);
  cluster->set_heartbeat_timeout_seconds(10);
  cluster->set_rpc_deadline_seconds(10);
  cluster->set_wait_timeout_seconds(120);
  cluster->set_pserver_threads(2);
  cluster->set_max_restarts(3);
  config.mutable_model()->set_type(FM);
  config.mutable_model()->set_embedding_dim(8);
  config.mutable_model()->set_cross_layers(3);
  // fastText's skip-gram defaults.
  Word2VecConfig* words = config.mutable_model()->mutable_word2vec();
  words->set_window(5);
  words->set_negatives(5);
  words->set_min_count(5);
  words->set_subsample(1e-4);
  words->set_seed(1);
  OptimizerConfig* dense = config.mutable_model()->mutable_dense_optimizer();
  dense->set_type(ADAM);
  dense->set_learning_rate(0.001f);
  dense->set_initial_accumulator(0.01f);
  TableConfig* table = config.mutable_table();
  table->set_num_shards(64);
  OptimizerConfig* optimizer = table->mutable_optimizer();
  optimizer->set_type(ADAGRAD);
  optimizer->set_learning_rate(0.05f);
  // Measured on validation slices (bench/RESULTS.md, 2026-12-02): w and v
  // sharing 0.01 made FM lose AUC with every epoch.
  optimizer->set_initial_accumulator(1);
  optimizer->set_init_range(0.01f);
  optimizer->set_l2(0);
  optimizer->set_ftrl_beta(1);
  optimizer->set_beta1(0.9f);
  optimizer->set_beta2(0.999f);
  optimizer->set_epsilon(1e-8f);
  optimizer->set_non_finite(REJECT_BATCH);
  table->set_backend(MEMORY);
  table->set_hot_tier_bytes(uint64_t{1} << 30);
  table->set_durability(WAL);
  table->set_durability_log(REDO_LOG);
  table->set_min_free_disk_bytes(uint64_t{256} << 20);
  table->set_write_back(SST_FILES);
  table->set_row_format(FP32);
  table->set_rounding(STOCHASTIC);
  AccessorConfig* accessor = table->mutable_accessor();
  accessor->set_nonclk_coeff(0.1f);
  accessor->set_click_coeff(1);
  accessor->set_show_decay_rate(0.98f);
  accessor->set_delete_after_unseen_days(30);
  table->mutable_admission()->set_probability(1);
  DataConfig* data = config.mutable_data();
  data->set_format(CRITEO_TSV);
  data->set_batch_size(1024);
  data->set_epochs(1);
  data->set_max_bad_fraction(0.01);
  // Synthetic by default so that an empty config is a runnable job; a config
  // that names files must set synthetic.rows: 0 (validation insists).
  data->mutable_synthetic()->set_rows(100000);
  data->mutable_synthetic()->set_seed(1);
  data->mutable_synthetic()->set_test_fraction(0.1);
  StreamConfig* stream = data->mutable_stream();
  stream->set_pattern("%Y%m%d/%H");
  stream->set_done_marker("_SUCCESS");
  stream->set_poll_seconds(5);
  stream->set_progressive_fraction(1);
  stream->set_keep_bases(3);
  ServingConfig* serving = config.mutable_serving();
  serving->set_poll_seconds(5);
  serving->set_max_examples_per_request(1000);
  serving->set_max_line_bytes(1 << 16);
  serving->set_memory_budget_mb(256);
  serving->set_lookup_deadline_seconds(1);
  config.set_output_dir("/tmp/sampan-job");
  config.set_progress_interval_seconds(2);
  config.mutable_checkpoint()->set_keep(3);
  config.mutable_checkpoint()->set_timeout_seconds(60);
  KubernetesConfig* k8s = config.mutable_kubernetes();
  k8s->set_image("sampan:latest");
  k8s->set_image_pull_policy("IfNotPresent");
  k8s->set_pserver_storage("10Gi");
  k8s->set_trainer_backoff_limit(3);
  k8s->set_grpc_port(7000);
  k8s->set_metrics_port(9090);
  k8s->set_data_mount_path("/data");
  k8s->set_serving_replicas(2);
  k8s->set_lookup_storage("10Gi");
  return config;
}

// The 1-based line of a document marker ("---" at column 0) that follows
// content, or 0 when the text holds at most one document.
int SecondDocumentLine(std::string_view yaml) {
  bool content = false;
  int line = 0;
  size_t pos = 0;
  while (pos <= yaml.size()) {
    size_t end = yaml.find('\n', pos);
    if (end == std::string_view::npos) end = yaml.size();
    const std::string_view text = yaml.substr(pos, end - pos);
    ++line;
    const bool marker = text.substr(0, 3) == "---" &&
                        (text.size() == 3 || text[3] == ' ' || text[3] == '\r');
    if (marker && content) return line;
    const size_t first = text.find_first_not_of(" \t\r");
    if (!marker && first != std::string_view::npos && text[first] != '#' &&
        text[first] != '%' && text.substr(0, 3) != "...") {
      content = true;
    }
    pos = end + 1;
  }
  return 0;
}

absl::StatusOr<JobConfig> ParseJobConfig(std::string_view yaml,
                                         std::string_view source) {
  // Debian's Abseil has its own string_view type, which StrCat requires.
  const absl::string_view source_name(source.data(), source.size());
  // One document only. YAML::LoadAll is not used to tell: in yaml-cpp 0.7 it
  // loops forever on input such as ",a: 1" (jbeder/yaml-cpp#1040, fixed
  // upstream by #1319), which a fuzzer found within seconds.
  if (const int line = SecondDocumentLine(yaml); line > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ":", line,
                     ": expected a single YAML document, got another here"));
  }
  std::vector<YAML::Node> documents;
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (root.IsDefined() && !root.IsNull()) {
      documents.push_back(root);
    } else if (yaml.find_first_not_of(" \t\r\n") != std::string_view::npos &&
               SecondDocumentLine(std::string(yaml) + "\n---") > 0) {
      // Text that is more than comments but reads as null (yaml-cpp takes
      // ",a: 1" for an empty document) is a mistake, not an empty config.
      return absl::InvalidArgumentError(
          absl::StrCat(source_name,
                       ":1: expected a mapping of job fields, got text that "
                       "YAML reads as empty"));
    }
  } catch (const YAML::Exception& e) {
    return SyntaxError(source_name, e);
  }
  JobConfig config = DefaultJobConfig();
  if (!documents.empty()) {
    const YAML::Node& root = documents[0];
    absl::Status status = MapYamlToMessage(root, source_name, &config);
    if (!status.ok()) return status;
    DefaultValidationSlice(root, &config);
  }
  absl::Status valid = ValidateJobConfig(config);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ": ", valid.message()));
  }
  return config;
}

absl::StatusOr<JobConfig> LoadJobConfig(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseJobConfig(*text, path);
}

}  // namespace sampan
