#include "common/config.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Parses `yaml` as job.yaml and returns the error message ("" on success).
std::string ParseError(const std::string& yaml) {
  absl::StatusOr<JobConfig> config = ParseJobConfig(yaml, "job.yaml");
  if (config.ok()) return "";
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

TEST(ConfigTest, RowFormatMustBeNamed) {
  EXPECT_EQ(ParseError("table: {row_format: INT8, rounding: NEAREST}\n"), "");
  EXPECT_NE(ParseError("table: {row_format: INT4}\n").find("row_format"),
            std::string::npos);
  EXPECT_EQ(ParseError("table: {rounding: UP}\n"),
            "job.yaml:1: table.rounding: expected one of STOCHASTIC, NEAREST, "
            "got \"UP\"");
  JobConfig c = DefaultJobConfig();
  c.mutable_table()->set_row_format(ROW_FORMAT_UNSPECIFIED);
  EXPECT_EQ(ValidateJobConfig(c).message(),
            "table.row_format: must be set (FP32, FP16 or INT8)");
}

TEST(ConfigTest, DefaultsAreValid) {
  EXPECT_TRUE(ValidateJobConfig(DefaultJobConfig()).ok());
}

TEST(ConfigTest, EmptyDocumentYieldsDefaults) {
  for (const char* yaml : {"", "# only a comment\n", "---\n"}) {
    absl::StatusOr<JobConfig> config = ParseJobConfig(yaml, "job.yaml");
    ASSERT_TRUE(config.ok()) << yaml << ": " << config.status();
    EXPECT_EQ(config->SerializeAsString(),
              DefaultJobConfig().SerializeAsString());
  }
}

TEST(ConfigTest, FullConfigRoundTrips) {
  const std::string yaml = R"(
name: criteo-lr
cluster:
  num_pservers: 4
  num_trainers: 3
  threads_per_trainer: 8
  host: 10.0.0.5
  coordinator_port: 7000
  heartbeat_timeout_seconds: 2.5
  rpc_deadline_seconds: 3
  wait_timeout_seconds: 60
model:
  type: lr
  embedding_dim: 16
  hidden: [400, 400]
table:
  num_shards: 128
  optimizer:
    type: SGD
    learning_rate: 0.1
    initial_accumulator: 0
    init_range: 0.001
    l2: 1e-5
data:
  format: CRITEO_TSV
  train_files: [a.tsv, "b.tsv"]
  test_files:
    - c.tsv
  batch_size: 512
  epochs: 3
  max_bad_fraction: 0
  synthetic:
    rows: 0
    seed: 18446744073709551615
output_dir: /data/out
progress_interval_seconds: 1
)";
  absl::StatusOr<JobConfig> config = ParseJobConfig(yaml, "job.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name(), "criteo-lr");
  EXPECT_EQ(config->cluster().num_pservers(), 4u);
  EXPECT_EQ(config->cluster().num_trainers(), 3u);
  EXPECT_EQ(config->cluster().threads_per_trainer(), 8u);
  EXPECT_EQ(config->cluster().host(), "10.0.0.5");
  EXPECT_EQ(config->cluster().coordinator_port(), 7000u);
  EXPECT_DOUBLE_EQ(config->cluster().heartbeat_timeout_seconds(), 2.5);
  EXPECT_DOUBLE_EQ(config->cluster().rpc_deadline_seconds(), 3);
  EXPECT_DOUBLE_EQ(config->cluster().wait_timeout_seconds(), 60);
  EXPECT_EQ(config->model().type(), LR);
  EXPECT_EQ(config->model().embedding_dim(), 16u);
  ASSERT_EQ(config->model().hidden_size(), 2);
  EXPECT_EQ(config->model().hidden(0), 400u);
  EXPECT_EQ(config->model().hidden(1), 400u);
  EXPECT_EQ(config->table().num_shards(), 128u);
  EXPECT_EQ(config->table().optimizer().type(), SGD);
  EXPECT_FLOAT_EQ(config->table().optimizer().learning_rate(), 0.1f);
  EXPECT_FLOAT_EQ(config->table().optimizer().initial_accumulator(), 0);
  EXPECT_FLOAT_EQ(config->table().optimizer().init_range(), 0.001f);
  EXPECT_FLOAT_EQ(config->table().optimizer().l2(), 1e-5f);
  EXPECT_EQ(config->data().format(), CRITEO_TSV);
  ASSERT_EQ(config->data().train_files_size(), 2);
  EXPECT_EQ(config->data().train_files(0), "a.tsv");
  EXPECT_EQ(config->data().train_files(1), "b.tsv");
  ASSERT_EQ(config->data().test_files_size(), 1);
  EXPECT_EQ(config->data().test_files(0), "c.tsv");
  EXPECT_EQ(config->data().batch_size(), 512u);
  EXPECT_EQ(config->data().epochs(), 3u);
  EXPECT_DOUBLE_EQ(config->data().max_bad_fraction(), 0);
  EXPECT_EQ(config->data().synthetic().rows(), 0u);
  EXPECT_EQ(config->data().synthetic().seed(), 18446744073709551615ull);
  // Left out of the YAML, so the default stays.
  EXPECT_DOUBLE_EQ(config->data().synthetic().test_fraction(), 0.1);
  EXPECT_EQ(config->output_dir(), "/data/out");
  EXPECT_DOUBLE_EQ(config->progress_interval_seconds(), 1);
}

TEST(ConfigTest, PartialConfigKeepsOtherDefaults) {
  absl::StatusOr<JobConfig> config =
      ParseJobConfig("cluster:\n  num_trainers: 5\n", "job.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  JobConfig expected = DefaultJobConfig();
  expected.mutable_cluster()->set_num_trainers(5);
  EXPECT_EQ(config->SerializeAsString(), expected.SerializeAsString());
}

TEST(ConfigTest, SequenceReplacesDefaultList) {
  absl::StatusOr<JobConfig> config =
      ParseJobConfig("model:\n  hidden: []\n", "job.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->model().hidden_size(), 0);
}

TEST(ConfigTest, UnknownTopLevelKey) {
  EXPECT_EQ(ParseError("name: x\nfoo: 1\n"),
            "job.yaml:2: foo: unknown field \"foo\" (expected one of: name, "
            "cluster, model, table, data, output_dir, "
            "progress_interval_seconds, checkpoint, init_model, serving, "
            "kubernetes)");
}

TEST(ConfigTest, ServingLimits) {
  EXPECT_EQ(ParseError("serving: {max_examples_per_request: 0}\n"),
            "job.yaml: serving.max_examples_per_request: must be at least 1, "
            "got 0");
  EXPECT_EQ(ParseError("serving: {port: 70000}\n"),
            "job.yaml: serving.port: must be at most 65535, got 70000");
  EXPECT_EQ(ParseError("serving: {model: /m, version: 3, poll_seconds: 1}\n"),
            "");
  EXPECT_EQ(ParseError("serving: {store_dir: /s, memory_budget_mb: 2}\n"),
            "job.yaml: serving.memory_budget_mb: must be at least 4, got 2");
  EXPECT_EQ(ParseError("serving: {store_dir: /s, memory_budget_mb: 64}\n"), "");
  EXPECT_EQ(ParseError("serving: {scoring_threads: 300}\n"),
            "job.yaml: serving.scoring_threads: must be at most 256, got 300");
  EXPECT_EQ(ParseError("serving: {scoring_threads: 4}\n"), "");
}

TEST(ConfigTest, ShardedServing) {
  EXPECT_EQ(ParseError("table: {num_shards: 8}\nserving: {shards: 9}\n"),
            "job.yaml: serving.shards: must be at most table.num_shards (8), "
            "got 9");
  EXPECT_EQ(ParseError("table: {num_shards: 8}\n"
                       "serving: {shards: 2, shard_addresses: [a:1]}\n"),
            "job.yaml: serving.shard_addresses: expected one per shard "
            "(serving.shards: 2), got 1");
  EXPECT_EQ(ParseError("table: {num_shards: 8}\n"
                       "serving: {shards: 2, shard_addresses: [a:1, b]}\n"),
            "job.yaml: serving.shard_addresses[1]: expected host:port, got "
            "\"b\"");
  EXPECT_EQ(ParseError("serving: {lookup_deadline_seconds: 0}\n"),
            "job.yaml: serving.lookup_deadline_seconds: must be > 0, got 0");
  EXPECT_EQ(ParseError("table: {num_shards: 8}\n"
                       "serving: {shards: 2, shard_addresses: [a:1, b:2], "
                       "lookup_deadline_seconds: 0.5}\n"),
            "");
}

// Checkpoints snapshot RocksDB; a memory table is refused before anything
// starts, and so are settings that cannot work.
TEST(ConfigTest, CheckpointNeedsRocksDb) {
  EXPECT_EQ(ParseError("checkpoint: {every_seconds: 60}\n"),
            "job.yaml: checkpoint: needs table.backend: ROCKSDB (a memory "
            "table cannot be snapshotted)");
  EXPECT_EQ(ParseError("table: {backend: ROCKSDB}\n"
                       "checkpoint: {every_steps: 100, keep: 2}\n"),
            "");
  EXPECT_THAT(ParseError("checkpoint: {keep: 0}\n"),
              HasSubstr("job.yaml: checkpoint.keep: must be at least 1"));
  EXPECT_THAT(ParseError("checkpoint: {timeout_seconds: 0}\n"),
              HasSubstr("job.yaml: checkpoint.timeout_seconds:"));
}

TEST(ConfigTest, UnknownNestedKey) {
  EXPECT_EQ(
      ParseError("model:\n  type: FM\n  embeding_dim: 4\n"),
      "job.yaml:3: model.embeding_dim: unknown field \"embeding_dim\" "
      "(expected one of: type, embedding_dim, hidden, cross_layers, "
      "dense_optimizer, num_fields, mode, field_embedding_dims, dense_device, "
      "word2vec, seed)");
}

TEST(ConfigTest, FieldEmbeddingDims) {
  const std::string head = "name: x\noutput_dir: /tmp/x\nmodel: {";
  EXPECT_EQ(ParseError(head + "type: DCN_V2, embedding_dim: 8, "
                              "field_embedding_dims: [4, 0, 8]}\n"),
            "");
  EXPECT_EQ(ParseError(head + "type: DNN, embedding_dim: 8, "
                              "field_embedding_dims: [4, 9]}\n"),
            "job.yaml: model.field_embedding_dims[1]: must be <= "
            "embedding_dim 8, got 9");
  EXPECT_EQ(ParseError(head + "type: DEEPFM, embedding_dim: 8, "
                              "field_embedding_dims: [4]}\n"),
            "job.yaml: model.field_embedding_dims[0]: DEEPFM's FM term needs "
            "one width: 0 or 8, got 4");
}

TEST(ConfigTest, ModeNeedsDenseWeights) {
  EXPECT_EQ(ParseError("name: x\noutput_dir: /tmp/x\nmodel: {type: FM, mode: "
                       "SYNC}\n"),
            "job.yaml: model.mode: SYNC needs dense weights; FM trains ASYNC "
            "(leave mode unset)");
  EXPECT_EQ(ParseError("name: x\noutput_dir: /tmp/x\nmodel: {type: DEEPFM, "
                       "mode: ASYNC}\n"),
            "");
}

TEST(ConfigTest, Word2VecRules) {
  const std::string base =
      "name: x\noutput_dir: /tmp/x\ndata: {format: TEXT, train_files: [t], "
      "synthetic: {rows: 0}}\n";
  const std::string sgd = "table: {optimizer: {type: SGD}}\n";
  EXPECT_EQ(ParseError(base + sgd + "model: {type: WORD2VEC}\n"), "");
  EXPECT_EQ(ParseError(base + "model: {type: WORD2VEC}\n"),
            "job.yaml: table.optimizer: WORD2VEC needs type SGD and l2 0 "
            "(trainers push each row's change, which SGD adds as is), got "
            "ADAGRAD l2 0");
  EXPECT_EQ(ParseError(base + sgd + "model: {type: FM}\n"),
            "job.yaml: data.format: TEXT is for model.type WORD2VEC, got FM");
  EXPECT_EQ(ParseError("name: x\noutput_dir: /tmp/x\n" + sgd +
                       "model: {type: WORD2VEC}\ndata: {train_files: [t], "
                       "synthetic: {rows: 0}}\n"),
            "job.yaml: data.format: WORD2VEC trains on TEXT, got CRITEO_TSV");
  EXPECT_EQ(ParseError(base + sgd +
                       "model: {type: WORD2VEC, word2vec: {subsample: 1}}\n"),
            "job.yaml: model.word2vec.subsample: must be in [0, 1), got 1");
  EXPECT_EQ(ParseError(base + "table: {optimizer: {type: SGD, init_range: 0}}\n"
                              "model: {type: WORD2VEC}\n"),
            "job.yaml: table.optimizer.init_range: must be > 0 for WORD2VEC: "
            "vectors that start at 0 never move");
  EXPECT_EQ(
      ParseError(base + "table: {optimizer: {type: SGD}, accessor: "
                        "{embedx_threshold: 2}}\nmodel: {type: WORD2VEC}\n"),
      "job.yaml: table.accessor.embedx_threshold: not with WORD2VEC: "
      "every word's vectors exist from its first step");
  EXPECT_EQ(ParseError(base + sgd + "model: {type: WORD2VEC, mode: HYBRID}\n"),
            "job.yaml: model.mode: HYBRID needs dense weights; WORD2VEC trains "
            "ASYNC (leave mode unset)");
}

TEST(ConfigTest, WrongTypeInSequenceNamesIndexAndLine) {
  const std::string yaml =
      "name: demo\n"         // 1
      "cluster:\n"           // 2
      "  num_pservers: 2\n"  // 3
      "model:\n"             // 4
      "  type: FM\n"         // 5
      "  hidden:\n"          // 6
      "    - 400\n"          // 7
      "    - x\n";           // 8
  EXPECT_EQ(ParseError(yaml),
            "job.yaml:8: model.hidden[1]: expected integer, got \"x\"");
  EXPECT_EQ(ParseError("model:\n  hidden: [400, x]\n"),
            "job.yaml:2: model.hidden[1]: expected integer, got \"x\"");
}

TEST(ConfigTest, WrongEnumNameListsValidNames) {
  EXPECT_EQ(ParseError("model:\n  type: XDEEP\n"),
            "job.yaml:2: model.type: expected one of LR, FM, DNN, WIDE_DEEP, "
            "DEEPFM, DCN_V2, WORD2VEC, got \"XDEEP\"");
  // The proto3 "not set" value is not a choice.
  EXPECT_THAT(ParseError("model:\n  type: MODEL_UNSPECIFIED\n"),
              HasSubstr("expected one of LR, FM"));
}

TEST(ConfigTest, NegativeForUnsigned) {
  EXPECT_EQ(ParseError("data:\n  batch_size: -1\n"),
            "job.yaml:2: data.batch_size: expected non-negative integer, got "
            "\"-1\"");
}

TEST(ConfigTest, IntegerRangeIsChecked) {
  EXPECT_EQ(ParseError("data:\n  epochs: 4294967296\n"),
            "job.yaml:2: data.epochs: expected integer in [0, 4294967295], got "
            "\"4294967296\"");
  EXPECT_THAT(
      ParseError("data:\n  synthetic:\n    rows: 18446744073709551616\n"),
      HasSubstr("data.synthetic.rows: expected integer in [0, "));
}

TEST(ConfigTest, FloatForInteger) {
  EXPECT_EQ(ParseError("table:\n  num_shards: 1.5\n"),
            "job.yaml:2: table.num_shards: expected integer, got \"1.5\"");
}

TEST(ConfigTest, QuotedNumberIsAString) {
  EXPECT_EQ(ParseError("data:\n  epochs: \"3\"\n"),
            "job.yaml:2: data.epochs: expected integer, got quoted string "
            "\"3\"");
}

TEST(ConfigTest, RealFieldsRejectText) {
  EXPECT_EQ(ParseError("data:\n  max_bad_fraction: lots\n"),
            "job.yaml:2: data.max_bad_fraction: expected finite number, got "
            "\"lots\"");
  EXPECT_THAT(ParseError("table:\n  optimizer:\n    l2: 1e60\n"),
              HasSubstr("table.optimizer.l2: expected number of magnitude"));
}

TEST(ConfigTest, SequenceWhereScalarExpected) {
  EXPECT_EQ(
      ParseError("model:\n  embedding_dim: [1, 2]\n"),
      "job.yaml:2: model.embedding_dim: expected integer, got a sequence");
  EXPECT_EQ(ParseError("name:\n  - a\n"),
            "job.yaml:2: name: expected string, got a sequence");
}

TEST(ConfigTest, ScalarWhereSequenceExpected) {
  EXPECT_EQ(ParseError("model:\n  hidden: 400\n"),
            "job.yaml:2: model.hidden: expected a sequence, got \"400\"");
}

TEST(ConfigTest, EmptyValues) {
  EXPECT_EQ(ParseError("model:\n  type: FM\nname:\n"),
            "job.yaml:3: name: expected string, got null");
  EXPECT_EQ(ParseError("model:\n  hidden:\n"),
            "job.yaml:2: model.hidden: expected a sequence, got null");
  // An empty section keeps its defaults.
  EXPECT_EQ(ParseError("cluster:\n# num_pservers: 3\n"), "");
}

TEST(ConfigTest, ScalarWhereMapExpected) {
  EXPECT_EQ(ParseError("cluster: 3\n"),
            "job.yaml:1: cluster: expected a map, got \"3\"");
  EXPECT_EQ(ParseError("- a\n"),
            "job.yaml:1: (top level): expected a map, got a sequence");
}

TEST(ConfigTest, DuplicateKey) {
  EXPECT_EQ(ParseError("name: a\nname: b\n"),
            "job.yaml:2: name: duplicate key");
}

TEST(ConfigTest, YamlSyntaxErrorGivesLine) {
  EXPECT_THAT(ParseError("name: a\ncluster:\n  num_pservers: [1, 2\n"),
              AllOf(StartsWith("job.yaml:"), HasSubstr("invalid YAML")));
  EXPECT_THAT(ParseError("name: a\nmodel: {type: FM\n"),
              StartsWith("job.yaml:"));
  EXPECT_THAT(ParseError("name: a\n  bad indent: 1\n"),
              StartsWith("job.yaml:2: invalid YAML"));
}

TEST(ConfigTest, MultipleDocumentsRejected) {
  EXPECT_THAT(ParseError("name: a\n---\nname: b\n"),
              HasSubstr("expected a single YAML document"));
}

TEST(ConfigTest, ValidationFailureNamesPath) {
  EXPECT_EQ(ParseError("cluster:\n  num_pservers: 0\n"),
            "job.yaml: cluster.num_pservers: must be at least 1, got 0");
  EXPECT_THAT(ParseError("cluster:\n  num_pservers: 100\n"),
              HasSubstr("job.yaml: table.num_shards:"));
  EXPECT_THAT(ParseError("model:\n  embedding_dim: 0\n"),
              HasSubstr("job.yaml: model.embedding_dim:"));
  EXPECT_THAT(ParseError("data:\n  max_bad_fraction: 1.5\n"),
              HasSubstr("job.yaml: data.max_bad_fraction:"));
  EXPECT_THAT(ParseError("data:\n  holdout_fraction: 1\n"),
              HasSubstr("job.yaml: data.holdout_fraction: must be in [0, 1)"));
  EXPECT_THAT(ParseError("table:\n  optimizer:\n    learning_rate: 0\n"),
              HasSubstr("job.yaml: table.optimizer.learning_rate:"));
  EXPECT_THAT(ParseError("output_dir: \"\"\n"),
              HasSubstr("job.yaml: output_dir:"));
  EXPECT_EQ(ParseError("table: {optimizer: {embedding_initial_accumulator: "
                       "-1}}\n"),
            "job.yaml: table.optimizer.embedding_initial_accumulator: must "
            "be >= 0, got -1");
  EXPECT_EQ(ParseError("table: {optimizer: {type: FTRL, "
                       "embedding_initial_accumulator: -1}}\n"),
            "job.yaml: table.optimizer.embedding_initial_accumulator: must "
            "be >= 0, got -1");
  EXPECT_EQ(ParseError("table: {optimizer: {type: FTRL, "
                       "embedding_initial_accumulator: 0}}\n"),
            "");
}

TEST(ConfigTest, DataSourceRules) {
  EXPECT_THAT(ParseError("data:\n  synthetic: {rows: 0}\n"),
              HasSubstr("job.yaml: data.train_files: must not be empty"));
  EXPECT_THAT(ParseError("data:\n  train_files: [a.tsv]\n"),
              HasSubstr("job.yaml: data.train_files: must be empty while "
                        "data.synthetic.rows > 0"));
  EXPECT_THAT(ParseError("data:\n  synthetic:\n    test_fraction: 1\n"),
              HasSubstr("job.yaml: data.synthetic.test_fraction:"));
  EXPECT_EQ(
      ParseError("data:\n  train_files: [a.tsv]\n  synthetic: {rows: 0}\n"),
      "");
}

// BY_FILE hands out whole files: fewer files than trainers would leave one
// with nothing to train. A shuffle window has a ceiling.
TEST(ConfigTest, SplitAndShuffleWindowRules) {
  const std::string two_trainers =
      "cluster: {num_trainers: 2}\ndata:\n  split: BY_FILE\n"
      "  synthetic: {rows: 0}\n";
  EXPECT_EQ(ParseError(two_trainers + "  train_files: [a.tsv]\n"),
            "job.yaml: data.split: BY_FILE needs at least "
            "cluster.num_trainers (2) training files, got 1; use "
            "BY_LINE_RANGE");
  EXPECT_EQ(ParseError(two_trainers + "  train_files: [a.tsv, b.tsv]\n"), "");
  EXPECT_THAT(
      ParseError("cluster: {num_trainers: 2}\ndata: {split: BY_FILE}\n"),
      HasSubstr("(synthetic data is one file)"));
  EXPECT_THAT(ParseError("data: {shuffle_buffer_rows: 20000000}\n"),
              HasSubstr("job.yaml: data.shuffle_buffer_rows: must be at most "
                        "10000000"));
}

TEST(ConfigTest, ValidateNamesPathWithoutSource) {
  JobConfig config = DefaultJobConfig();
  config.mutable_cluster()->set_rpc_deadline_seconds(0);
  absl::Status status = ValidateJobConfig(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              StartsWith("cluster.rpc_deadline_seconds: "));
}

TEST(ConfigTest, LoadMissingFileIsNotFound) {
  const std::string path = ::testing::TempDir() + "/no-such-job.yaml";
  absl::StatusOr<JobConfig> config = LoadJobConfig(path);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr(path));
}

TEST(ConfigTest, LoadDirectoryIsNotFound) {
  absl::StatusOr<JobConfig> config = LoadJobConfig(::testing::TempDir());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kNotFound);
}

TEST(ConfigTest, LoadUsesPathInErrors) {
  const std::string path = ::testing::TempDir() + "/bad-job.yaml";
  std::ofstream(path) << "model:\n  hidden: [1, x]\n";
  absl::StatusOr<JobConfig> config = LoadJobConfig(path);
  EXPECT_EQ(config.status().message(),
            path + ":2: model.hidden[1]: expected integer, got \"x\"");
  std::remove(path.c_str());
}

TEST(ConfigTest, LoadReadsFile) {
  const std::string path = ::testing::TempDir() + "/good-job.yaml";
  std::ofstream(path) << "name: from-file\n";
  absl::StatusOr<JobConfig> config = LoadJobConfig(path);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->name(), "from-file");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sampan

namespace sampan {
namespace {

// Found by tests/fuzz/config_fuzzer: yaml-cpp 0.7's LoadAll loops forever on
// this input. The loader must answer, and reject it.
TEST(ConfigTest, TextThatYamlReadsAsEmptyIsRejectedNotLoopedOn) {
  absl::StatusOr<JobConfig> config = ParseJobConfig(",ame: demo\n", "job.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "job.yaml:1: expected a mapping of job fields, got text that YAML "
            "reads as empty");
  EXPECT_TRUE(ParseJobConfig("# only a comment\n", "job.yaml").ok());
}

TEST(ConfigTest, SecondDocumentIsNamedByLine) {
  absl::StatusOr<JobConfig> config =
      ParseJobConfig("---\nname: a\n---\nname: b\n", "job.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(),
            "job.yaml:3: expected a single YAML document, got another here");
}

TEST(ConfigTest, KubernetesQuantitiesAreChecked) {
  EXPECT_TRUE(
      ParseJobConfig("kubernetes: {pserver: {cpu_request: 500m, memory_limit: "
                     "1.5Gi}, trainer: {gpus: 1}}\n",
                     "job.yaml")
          .ok());
  absl::StatusOr<JobConfig> config = ParseJobConfig(
      "kubernetes: {trainer: {memory_limit: 4GB}}\n", "job.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("kubernetes.trainer.memory_limit: not a Kubernetes "
                        "quantity"));
  EXPECT_FALSE(
      ParseJobConfig("kubernetes: {image_pull_policy: Sometimes}\n", "job.yaml")
          .ok());
}

// More than one epoch of a CTR batch job stops early on a validation slice
// unless the job says otherwise; one epoch, word vectors and streams do not.
TEST(ConfigTest, ValidationSliceByDefaultWithEpochs) {
  auto fraction = [](const std::string& yaml) {
    absl::StatusOr<JobConfig> c = ParseJobConfig(yaml, "job.yaml");
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? c->data().validation_fraction() : -1;
  };
  EXPECT_EQ(fraction("data: {epochs: 3}\n"), kDefaultValidationFraction);
  EXPECT_EQ(fraction("data: {epochs: 3, validation_fraction: 0}\n"), 0);
  EXPECT_EQ(fraction("data: {epochs: 3, validation_fraction: 0.2}\n"), 0.2);
  EXPECT_EQ(fraction("data: {epochs: 1}\n"), 0);
  EXPECT_EQ(fraction("name: x\n"), 0);
  EXPECT_EQ(fraction("model: {type: WORD2VEC}\n"
                     "table: {optimizer: {type: SGD, init_range: 0.01}}\n"
                     "data: {format: TEXT, epochs: 5, train_files: [a.txt],\n"
                     "       synthetic: {rows: 0}}\n"),
            0);
}

// Early stopping on a validation slice: both train-local and `sampan run`.
TEST(ConfigTest, RunTakesAValidationSlice) {
  JobConfig config = DefaultJobConfig();
  config.mutable_data()->set_validation_fraction(0.1);
  EXPECT_TRUE(ValidateJobConfig(config).ok());
  EXPECT_TRUE(ValidateForRun(config).ok());
  EXPECT_TRUE(ValidateForTrainLocal(config).ok());
}

// A stream replaces train_files; its names must spell the pattern; what a
// stream job cannot do yet is refused before anything starts.
TEST(ConfigTest, StreamRules) {
  const std::string stream =
      "data:\n  synthetic: {rows: 0}\n  stream:\n    root: /tmp/s\n";
  EXPECT_EQ(ParseError(stream), "");
  EXPECT_THAT(ParseError("data:\n  stream: {root: /tmp/s}\n"),
              HasSubstr("data.synthetic.rows: must be 0 with data.stream"));
  EXPECT_THAT(ParseError(stream + "  train_files: [a.tsv]\n"),
              HasSubstr("data.train_files: must be empty with data.stream"));
  EXPECT_THAT(ParseError(stream + "    pattern: \"%H\"\n"),
              HasSubstr("data.stream.pattern: pattern \"%H\" must have"));
  EXPECT_THAT(ParseError(stream + "    end_pass: \"2026120105\"\n"),
              HasSubstr("data.stream.end_pass: \"2026120105\" does not match"));
  EXPECT_THAT(ParseError(stream + "    start_pass: \"20261201/05\"\n" +
                         "    end_pass: \"20261201/04\"\n"),
              HasSubstr("data.stream.end_pass: \"20261201/04\" is before"));
  EXPECT_THAT(ParseError(stream + "    done_marker: a/b\n"),
              HasSubstr("data.stream.done_marker:"));
  EXPECT_EQ(ParseError(stream + "serving: {enabled: true}\n"), "");
  EXPECT_THAT(ParseError("serving: {enabled: true}\n"),
              HasSubstr("serving.enabled: needs data.stream"));

  absl::StatusOr<JobConfig> config = ParseJobConfig(stream, "job.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(ValidateForRun(*config).ok());
  EXPECT_THAT(std::string(ValidateForTrainLocal(*config).message()),
              StartsWith("data.stream: "));
  JobConfig deep = *config;
  deep.mutable_model()->set_type(DEEPFM);
  EXPECT_TRUE(ValidateForRun(deep).ok());  // HYBRID
  deep.mutable_model()->set_mode(ModelConfig::ASYNC);
  EXPECT_TRUE(ValidateForRun(deep).ok());
  JobConfig ckpt = *config;
  ckpt.mutable_table()->set_backend(ROCKSDB);
  ckpt.mutable_checkpoint()->set_every_steps(100);
  EXPECT_THAT(std::string(ValidateForRun(ckpt).message()),
              StartsWith("checkpoint.every_steps: "));
  ckpt.mutable_checkpoint()->set_every_steps(0);
  ckpt.mutable_checkpoint()->set_every_passes(1);
  EXPECT_TRUE(ValidateJobConfig(ckpt).ok());
  EXPECT_TRUE(ValidateForRun(ckpt).ok());
  EXPECT_TRUE(TakesCheckpoints(ckpt));
  EXPECT_THAT(ParseError("checkpoint: {every_passes: 1}\n"),
              HasSubstr("checkpoint.every_passes: needs data.stream"));
  JobConfig epochs = *config;
  epochs.mutable_data()->set_epochs(2);
  EXPECT_THAT(std::string(ValidateForRun(epochs).message()),
              StartsWith("data.epochs: "));
  JobConfig slice = *config;
  slice.mutable_data()->set_validation_fraction(0.1);
  EXPECT_THAT(std::string(ValidateForRun(slice).message()),
              StartsWith("data.validation_fraction: "));
}

}  // namespace
}  // namespace sampan
