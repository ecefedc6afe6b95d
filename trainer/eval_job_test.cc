// `sampan eval` and `sampan model-rows` on model versions: a base copied from
// a real train-local export plus a delta (changed, deleted and new rows, new
// dense weights) prints exactly the rows and dense hash of a fresh export of
// the merged model, and scores exactly as that export does.
#include "trainer/eval_job.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/config.h"
#include "gtest/gtest.h"
#include "trainer/data/synthetic.h"
#include "trainer/local_job.h"
#include "trainer/model/model_io.h"
#include "trainer/model_export.h"
#include "trainer/model_version.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

using Rows = std::map<uint64_t, std::vector<float>>;

// Writes `rows` as part 0 of `dir`.
void WriteRows(const std::string& dir, const Rows& rows, int dim) {
  std::vector<uint64_t> keys;
  for (const auto& entry : rows) keys.push_back(entry.first);
  RowReader read = [&rows](absl::Span<const uint64_t> keys, float* out) {
    for (uint64_t key : keys) {
      out = std::copy(rows.at(key).begin(), rows.at(key).end(), out);
    }
    return absl::OkStatus();
  };
  ASSERT_TRUE(ExportSparsePart(dir, 0, keys, dim, read).ok());
}

std::string ModelRows(const std::string& model) {
  std::ostringstream out;
  absl::Status s = WriteModelRows(model, &out);
  EXPECT_TRUE(s.ok()) << s;
  return out.str();
}

TEST(EvalJob, VersionChainScoresAndPrintsAsAFreshExport) {
  const std::string tmp = std::getenv("TEST_TMPDIR");
  SyntheticOptions synthetic;
  synthetic.rows = 6000;
  synthetic.seed = 7;
  synthetic.test_fraction = 0.25;
  const std::string train = tmp + "/train.tsv", test = tmp + "/test.tsv";
  ASSERT_TRUE(GenerateCriteoData(synthetic, train, test, "").ok());
  JobConfig config = DefaultJobConfig();
  config.set_name("versions-eval");
  config.set_output_dir(tmp + "/job");
  config.mutable_model()->set_type(DNN);
  config.mutable_model()->set_embedding_dim(4);
  config.mutable_model()->clear_hidden();
  config.mutable_model()->add_hidden(8);
  config.mutable_cluster()->set_threads_per_trainer(1);
  config.mutable_data()->mutable_synthetic()->set_rows(0);
  config.mutable_data()->add_train_files(train);
  config.mutable_data()->add_test_files(test);
  ASSERT_TRUE(TrainLocalJob(config).ok());
  const std::string exported = ModelDir(config);

  // The export's rows and dense weights.
  JobConfig job;
  absl::StatusOr<ModelManifest> manifest = ReadModelManifest(exported, &job);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  const CtrModel model(LocalOptionsFromJob(job)->model);
  const int dim = model.row_dim();
  absl::StatusOr<SparseRows> sparse = ReadSparseRows(exported, *manifest, dim);
  ASSERT_TRUE(sparse.ok()) << sparse.status();
  ASSERT_GT(sparse->index.size(), 100u);
  Rows rows;
  for (const auto& [key, i] : sparse->index) {
    rows[key].assign(sparse->rows.begin() + size_t(i) * dim,
                     sparse->rows.begin() + size_t(i + 1) * dim);
  }
  absl::StatusOr<DenseModelState> dense =
      LoadDenseModel(DenseModelPath(exported), model);
  ASSERT_TRUE(dense.ok()) << dense.status();
  ASSERT_GT(dense->weights.size(), 0u);

  // Version 1: the export as a base.
  const std::string root = VersionsRoot(config);
  ModelManifest one_part;
  ASSERT_TRUE(ClearStaging(root, 1).ok());
  WriteRows(StagingDir(root, 1), rows, dim);
  fs::copy_file(DenseModelPath(exported), DenseModelPath(StagingDir(root, 1)));
  VersionInfo info;
  info.version = 1;
  info.base = true;
  info.pass = "20261201/00";
  ASSERT_TRUE(PublishVersion(root, job, one_part, info, 0).ok());

  // Version 2: a delta that changes, deletes and adds rows, new dense.
  Rows delta;
  int n = 0;
  for (const auto& [key, row] : rows) {
    if (n++ >= 20) break;
    delta[key] = row;
    for (float& x : delta[key]) x = n % 2 ? x + 1 : 0.0f;
  }
  for (uint64_t key = 1; key <= 3; ++key) {
    delta[key] = std::vector<float>(dim, 0.125f * key);
  }
  DenseModelState dense2 = *dense;
  for (float& w : dense2.weights) w *= 0.5f;
  ASSERT_TRUE(ClearStaging(root, 2).ok());
  WriteRows(StagingDir(root, 2), delta, dim);
  ASSERT_TRUE(
      SaveDenseModel(DenseModelPath(StagingDir(root, 2)), model, dense2).ok());
  info.version = 2;
  info.base = false;
  info.base_version = 1;
  info.pass = "20261201/01";
  ASSERT_TRUE(PublishVersion(root, job, one_part, info, 0).ok());

  // What a fresh export of the merged model holds.
  Rows merged = rows;
  for (const auto& [key, row] : delta) {
    if (std::all_of(row.begin(), row.end(), [](float x) { return x == 0; })) {
      merged.erase(key);
    } else {
      merged[key] = row;
    }
  }
  const std::string fresh = tmp + "/fresh";
  WriteRows(fresh, merged, dim);
  ASSERT_TRUE(SaveDenseModel(DenseModelPath(fresh), model, dense2).ok());
  ASSERT_TRUE(FinishModelDir(fresh, job, one_part).ok());

  const std::string printed = ModelRows(root);
  EXPECT_EQ(printed, ModelRows(fresh));
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'),
            long(merged.size()) + 1);
  EXPECT_NE(printed, ModelRows(VersionDir(root, 1)));
  EXPECT_EQ(ModelRows(VersionDir(root, 1)), ModelRows(exported));

  std::string version = "not set";
  absl::StatusOr<EvalMetrics> chain = EvaluateModel(root, test, &version);
  ASSERT_TRUE(chain.ok()) << chain.status();
  EXPECT_EQ(version,
            "v-000002 (delta on base v-000001, pass 20261201/01) in " + root);
  absl::StatusOr<EvalMetrics> want = EvaluateModel(fresh, test, &version);
  ASSERT_TRUE(want.ok()) << want.status();
  EXPECT_EQ(version, "");
  EXPECT_EQ(chain->auc, want->auc);
  EXPECT_EQ(chain->logloss, want->logloss);
  EXPECT_EQ(chain->rows, want->rows);
  absl::StatusOr<EvalMetrics> base = EvaluateModel(VersionDir(root, 1), test);
  absl::StatusOr<EvalMetrics> original = EvaluateModel(exported, test);
  ASSERT_TRUE(base.ok() && original.ok());
  EXPECT_EQ(base->auc, original->auc);
  EXPECT_NE(base->logloss, chain->logloss);
}

}  // namespace
}  // namespace sampan
