#include "sparse_table/job_options.h"

#include <utility>
#include <vector>

#include "common/config.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

TEST(JobOptionsTest, DefaultsMapToAValidMemoryTable) {
  const JobConfig job = DefaultJobConfig();
  ASSERT_TRUE(ValidateJobConfig(job).ok());
  const TableOptions o = TableOptionsFromJob(job, 1);
  EXPECT_EQ(o.backend, Backend::kMemory);
  EXPECT_EQ(o.rule, OptimizerRule::kAdagrad);
  EXPECT_EQ(o.embedding_dim, 8u);
  EXPECT_EQ(o.data_dir, "/tmp/sampan-job/tables/pserver-1");
  EXPECT_EQ(o.durability, Durability::kWal);
  EXPECT_FLOAT_EQ(o.admit_probability, 1.0f);
  EXPECT_EQ(o.min_weight, -FLT_MAX);  // 0/0 in the config = unbounded
  EXPECT_EQ(o.initial_accumulator, 1.0f);
  EXPECT_EQ(o.embedding_initial_accumulator, 1000.0f);
  EXPECT_EQ(o.row_format, RowFormat::kFp32);
  EXPECT_EQ(o.rounding, Rounding::kStochastic);
  auto table = NewTable(o);
  ASSERT_TRUE(table.ok());
  EXPECT_EQ((*table)->pull_dim(), 9u);
}

TEST(JobOptionsTest, AsyncDeepJobsGetADenseTableWithTheDenseOptimizer) {
  absl::StatusOr<JobConfig> job = ParseJobConfig(
      "model: {type: DEEPFM, mode: ASYNC, embedding_dim: 4,"
      " dense_optimizer: {type: ADAM, learning_rate: 0.003, l2: 0.01}}\n"
      "table:\n"
      "  backend: ROCKSDB\n"
      "  data_dir: /data/t\n"
      "  optimizer: {type: ADAGRAD, learning_rate: 0.05, l2: 0.1,"
      " init_range: 0.01, min_weight: -1, max_weight: 1,"
      " initial_accumulator: 2, embedding_initial_accumulator: 300}\n"
      "  admission: {min_pushes: 3}\n"
      "  accessor: {embedx_threshold: 2, delete_after_unseen_days: 7}\n",
      "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(HasDenseTable(*job));
  const TableOptions sparse = TableOptionsFromJob(*job, 1);
  EXPECT_EQ(sparse.initial_accumulator, 2.0f);
  EXPECT_EQ(sparse.embedding_initial_accumulator, 300.0f);
  const TableOptions o = DenseTableOptionsFromJob(*job, 1);
  // One Adagrad start for a whole dense row, as the trainer's optimizer.
  EXPECT_EQ(o.embedding_initial_accumulator, o.initial_accumulator);
  EXPECT_EQ(o.data_dir, "/data/t/pserver-1/table-1");
  EXPECT_EQ(o.backend, Backend::kRocksDb);
  EXPECT_EQ(o.embedding_dim, sparse.embedding_dim);  // rows as wide
  EXPECT_EQ(o.rule, OptimizerRule::kAdam);
  EXPECT_FLOAT_EQ(o.learning_rate, 0.003f);
  EXPECT_FLOAT_EQ(o.l2, 0.01f);
  EXPECT_FLOAT_EQ(o.beta1, 0.9f);
  EXPECT_FLOAT_EQ(o.beta2, 0.999f);
  EXPECT_EQ(o.init_range, 0.0f);  // offsets start at the initialisation
  EXPECT_EQ(o.min_weight, -FLT_MAX);
  EXPECT_EQ(o.admit_after_pushes, 0u);
  EXPECT_EQ(o.embedx_threshold, 0.0f);
  EXPECT_EQ(o.delete_after_unseen_days, UINT32_MAX);

  job->mutable_model()->set_mode(ModelConfig::HYBRID);
  EXPECT_FALSE(HasDenseTable(*job));
  job->mutable_model()->set_mode(ModelConfig::ASYNC);
  job->mutable_model()->set_type(FM);  // no dense weights
  EXPECT_FALSE(HasDenseTable(*job));
}

TEST(JobOptionsTest, RowFormatMapsToSparseTablesOnly) {
  absl::StatusOr<JobConfig> job = ParseJobConfig(
      "model: {type: DNN, mode: ASYNC}\n"
      "table: {row_format: INT8, rounding: NEAREST}\n",
      "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status();
  const TableOptions o = TableOptionsFromJob(*job, 0);
  EXPECT_EQ(o.row_format, RowFormat::kInt8);
  EXPECT_EQ(o.rounding, Rounding::kNearest);
  ASSERT_TRUE(HasDenseTable(*job));
  EXPECT_EQ(DenseTableOptionsFromJob(*job, 0).row_format, RowFormat::kFp32);
  job->mutable_table()->set_row_format(FP16);
  EXPECT_EQ(TableOptionsFromJob(*job, 0).row_format, RowFormat::kFp16);
}

TEST(JobOptionsTest, RocksDbFieldsMap) {
  absl::StatusOr<JobConfig> job = ParseJobConfig(
      "model: {type: LR}\n"
      "table:\n"
      "  backend: ROCKSDB\n"
      "  data_dir: /data/t\n"
      "  hot_tier_bytes: 2000000\n"
      "  durability: SYNC\n"
      "  durability_log: ROCKSDB_WAL\n"
      "  write_back: MEMTABLE\n"
      "  optimizer: {type: FTRL, learning_rate: 0.1, l1: 0.5,"
      " min_weight: -2, max_weight: 3, non_finite: SKIP_KEY}\n"
      "  admission: {min_pushes: 3, probability: 0.5}\n"
      "  accessor: {embedx_threshold: 2, delete_after_unseen_days: 7}\n",
      "job.yaml");
  ASSERT_TRUE(job.ok()) << job.status();
  const TableOptions o = TableOptionsFromJob(*job, 0);
  EXPECT_EQ(o.backend, Backend::kRocksDb);
  EXPECT_EQ(o.data_dir, "/data/t/pserver-0");
  EXPECT_EQ(o.hot_tier_bytes, 2000000u);
  EXPECT_EQ(o.durability, Durability::kSync);
  EXPECT_EQ(o.durability_log, DurabilityLog::kRocksDbWal);
  EXPECT_EQ(o.write_back, WriteBack::kMemtable);
  EXPECT_EQ(o.rule, OptimizerRule::kFtrl);
  EXPECT_FLOAT_EQ(o.l1, 0.5f);
  EXPECT_FLOAT_EQ(o.min_weight, -2.0f);
  EXPECT_FLOAT_EQ(o.max_weight, 3.0f);
  EXPECT_EQ(o.non_finite, NonFinitePolicy::kSkipKey);
  EXPECT_EQ(o.admit_after_pushes, 3u);
  EXPECT_FLOAT_EQ(o.admit_probability, 0.5f);
  EXPECT_FLOAT_EQ(o.embedx_threshold, 2.0f);
  EXPECT_EQ(o.delete_after_unseen_days, 7u);
  EXPECT_EQ(o.embedding_dim, 0u);
}

TEST(JobOptionsTest, EmbeddingStartIsByModelUnlessSet) {
  for (const auto& [yaml, want] : std::vector<std::pair<const char*, float>>{
           {"model: {type: FM}\n", kEmbeddingInitialAccumulator},
           {"model: {type: DEEPFM}\n", kEmbeddingInitialAccumulator},
           // A DNN's embeddings are its only sparse signal: not damped.
           {"model: {type: DNN}\n", 1.0f},
           {"model: {type: DNN}\ntable: {optimizer: {initial_accumulator: "
            "3}}\n",
            3.0f},
           {"model: {type: DNN}\n"
            "table: {optimizer: {embedding_initial_accumulator: 50}}\n",
            50.0f},
       }) {
    absl::StatusOr<JobConfig> job = ParseJobConfig(yaml, "job.yaml");
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(TableOptionsFromJob(*job, 0).embedding_initial_accumulator, want)
        << yaml;
  }
}

TEST(JobOptionsTest, ValidationRejectsBadTableFields) {
  for (const char* yaml : {
           "table: {hot_tier_bytes: 10, backend: ROCKSDB}\n",
           "table: {admission: {probability: 0}}\n",
           "table: {admission: {min_pushes: 300}}\n",
           "table: {optimizer: {min_weight: 1, max_weight: -1}}\n",
           "table: {optimizer: {type: ADAM, beta1: 1}}\n",
           "table: {optimizer: {type: SGD, embedding_initial_accumulator: "
           "-1}}\n",
       }) {
    EXPECT_FALSE(ParseJobConfig(yaml, "job.yaml").ok()) << yaml;
  }
}

}  // namespace
}  // namespace sampan
