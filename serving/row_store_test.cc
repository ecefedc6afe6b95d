// VersionStore on a real RocksDB: a base many times its memory budget read
// back exactly, deltas (updates and deletions) applied while older views
// keep reading their own version, a corrupt delta refused with nothing
// changed, a shard's key filter; then `sampan serve` with a store: the same
// probabilities as eval for every model kind tested, a swap under load and
// a corrupt delta refused while the previous version keeps serving.
#include "serving/row_store.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/config.h"
#include "gtest/gtest.h"
#include "serving/serving.h"
#include "serving/serving_testlib.h"
#include "trainer/model_version.h"

namespace sampan {
namespace {

using servetest::Tmp;
using Rows = std::map<uint64_t, std::vector<float>>;

constexpr int kDim = 9;

// Publishes `rows` as version `version` (a base when base == version) in two
// parts that share every tenth key.
void Publish(const std::string& root, uint64_t version, uint64_t base,
             const Rows& rows) {
  ASSERT_TRUE(ClearStaging(root, version).ok());
  const std::string staging = StagingDir(root, version);
  for (int part = 0; part < 2; ++part) {
    std::vector<uint64_t> keys;
    for (const auto& [key, row] : rows) {
      if (key % 2 == uint64_t(part) || key % 10 == 1) keys.push_back(key);
    }
    RowReader read = [&](absl::Span<const uint64_t> ks, float* out) {
      for (uint64_t k : ks) out = std::copy_n(rows.at(k).data(), kDim, out);
      return absl::OkStatus();
    };
    ASSERT_TRUE(ExportSparsePart(staging, part, keys, kDim, read).ok());
  }
  // The store reads no dense weights; a version needs the file all the same.
  { std::ofstream(DenseModelPath(staging)) << "dense"; }
  ModelManifest manifest;
  manifest.sparse_parts = 2;
  VersionInfo info;
  info.version = version;
  info.base = base == version;
  info.base_version = base;
  absl::Status s = PublishVersion(root, DefaultJobConfig(), manifest, info, 0);
  ASSERT_TRUE(s.ok()) << s;
}

std::vector<float> RowOf(uint64_t key, float scale) {
  std::vector<float> row(kDim);
  for (int j = 0; j < kDim; ++j) row[j] = scale * float(key % 1000 + j) / 7;
  return row;
}

// Looks up `keys` in `view` and expects `want`'s rows (absent: no row).
void ExpectRows(const RowSource& view, const std::vector<uint64_t>& keys,
                const Rows& want) {
  std::vector<float> rows(keys.size() * kDim);
  std::vector<uint8_t> found(keys.size());
  absl::Status s = view.Lookup(keys, rows.data(), found.data());
  ASSERT_TRUE(s.ok()) << s;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = want.find(keys[i]);
    ASSERT_EQ(found[i], it != want.end()) << keys[i];
    for (int j = 0; j < kDim; ++j) {
      ASSERT_EQ(rows[i * kDim + j], it == want.end() ? 0.0f : it->second[j])
          << keys[i];
    }
  }
}

// Every key of `want`, some absent ones, and repeats, in a few batches.
void ExpectAll(const RowSource& view, const Rows& want, uint64_t max_key) {
  std::vector<uint64_t> keys;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) keys.push_back(rng() % (max_key + 100));
  for (const auto& [key, row] : want) keys.push_back(key);
  for (size_t at = 0; at < keys.size(); at += 4000) {
    std::vector<uint64_t> batch(
        keys.begin() + at, keys.begin() + std::min(keys.size(), at + 4000));
    ExpectRows(view, batch, want);
  }
}

TEST(VersionStore, LargerThanItsBudgetDeltasAndCorruptVersions) {
  const std::string root = Tmp() + "/store-unit/versions";
  constexpr uint64_t kKeys = 200000;  // ~11 MB of SST: 3x the budget
  Rows v1;
  for (uint64_t k = 1; k <= kKeys; ++k) v1[k * 3] = RowOf(k, 1);
  v1[6] = std::vector<float>(kDim, 0.0f);  // a base's zero row: no row
  Publish(root, 1, 1, v1);
  v1.erase(6);

  VersionStoreOptions options;
  options.dir = Tmp() + "/store-unit/store";
  options.memory_budget_bytes = 4 << 20;
  absl::StatusOr<std::unique_ptr<VersionStore>> store =
      VersionStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  auto chain = ReadChainMembers(root, 1);
  ASSERT_TRUE(chain.ok());
  auto view1 = (*store)->Bring(*chain);
  ASSERT_TRUE(view1.ok()) << view1.status();
  ExpectAll(**view1, v1, kKeys * 3);
  const VersionStore::Stats stats = (*store)->stats();
  EXPECT_GT(stats.bytes, 2 * options.memory_budget_bytes);
  EXPECT_LE(stats.memory_bytes, options.memory_budget_bytes);
  EXPECT_GT(stats.cache_misses, 0u);
  // The hot tier holds what it can, and answered keys read again.
  EXPECT_GT(stats.hot_rows, 1000u);
  EXPECT_GT(stats.hot_bytes, options.memory_budget_bytes / 16);
  EXPECT_GT(stats.hot_hits, 0u);
  EXPECT_GT(stats.hot_misses, 0u);
  EXPECT_GT((*view1)->row_count(), kKeys / 2);

  // Delta 2: every fifth row changed, every eleventh deleted, new keys.
  Rows d2, v2 = v1;
  for (uint64_t k = 3; k <= kKeys * 3; k += 15) d2[k] = v2[k] = RowOf(k, 2);
  for (uint64_t k = 3; k <= kKeys * 3; k += 33) {
    d2[k] = std::vector<float>(kDim, -0.0f);
    v2.erase(k);
  }
  for (uint64_t k = 1; k <= 1000; ++k)
    d2[k * 3 + 1] = v2[k * 3 + 1] = RowOf(k, 3);
  Publish(root, 2, 1, d2);
  chain = ReadChainMembers(root, 2);
  ASSERT_TRUE(chain.ok());
  auto view2 = (*store)->Bring(*chain);
  ASSERT_TRUE(view2.ok()) << view2.status();
  ExpectAll(**view2, v2, kKeys * 3);
  ExpectAll(**view1, v1, kKeys * 3);  // its snapshot: version 1 still

  // Delta 3 with a byte flipped: refused naming the file, nothing changed.
  Rows d3, v3 = v2;
  for (uint64_t k = 6; k <= kKeys * 3; k += 21) d3[k] = v3[k] = RowOf(k, 4);
  Publish(root, 3, 1, d3);
  servetest::FlipByte(VersionDir(root, 3) + "/sparse-00001.bin", 64);
  chain = ReadChainMembers(root, 3);
  ASSERT_TRUE(chain.ok());
  auto refused = (*store)->Bring(*chain);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "sparse-00001"))
      << refused.status();
  ExpectAll(**view2, v2, kKeys * 3);

  // Published again whole (a resumed job): applied on top of version 2.
  Publish(root, 3, 1, d3);
  chain = ReadChainMembers(root, 3);
  ASSERT_TRUE(chain.ok());
  auto view3 = (*store)->Bring(*chain);
  ASSERT_TRUE(view3.ok()) << view3.status();
  ExpectAll(**view3, v3, kKeys * 3);

  // A new base goes into a new column family; the old views still read.
  Rows v4;
  for (uint64_t k = 1; k <= 5000; ++k) v4[k * 5] = RowOf(k, 5);
  Publish(root, 4, 4, v4);
  chain = ReadChainMembers(root, 4);
  ASSERT_TRUE(chain.ok());
  auto view4 = (*store)->Bring(*chain);
  ASSERT_TRUE(view4.ok()) << view4.status();
  ExpectAll(**view4, v4, 5000 * 5);
  ExpectAll(**view1, v1, kKeys * 3);
  ExpectAll(**view3, v3, kKeys * 3);
}

// A store reopened on its directory builds on what it holds: the same
// versions load nothing (their part files may even be gone), a newer delta
// is applied alone; another key filter or another base loads afresh.
TEST(VersionStore, KeptAcrossRestarts) {
  const std::string root = Tmp() + "/store-kept/versions";
  Rows v1, d2, v2, d3, v3;
  for (uint64_t k = 1; k <= 20000; ++k) v1[k] = RowOf(k, 1);
  for (uint64_t k = 1; k <= 20000; k += 7) d2[k] = RowOf(k, 2);
  d2[10] = std::vector<float>(kDim, 0.0f);
  v2 = v1;
  for (const auto& [k, row] : d2) v2[k] = row;
  v2.erase(10);
  Publish(root, 1, 1, v1);
  Publish(root, 2, 1, d2);
  VersionStoreOptions options;
  options.dir = Tmp() + "/store-kept/store";
  options.memory_budget_bytes = 4 << 20;
  {
    auto store = VersionStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    auto view = (*store)->Bring(*ReadChainMembers(root, 2));
    ASSERT_TRUE(view.ok()) << view.status();
    ExpectAll(**view, v2, 20000);
  }
  // Without the base's and the first delta's rows, only a store that kept
  // them can serve versions 2 and 3.
  for (uint64_t v : {1, 2}) {
    for (int part = 0; part < 2; ++part) {
      std::filesystem::remove(
          absl::StrFormat("%s/sparse-%05d.bin", VersionDir(root, v), part));
    }
  }
  for (uint64_t k = 2; k <= 20000; k += 11) d3[k] = RowOf(k, 3);
  v3 = v2;
  for (const auto& [k, row] : d3) v3[k] = row;
  Publish(root, 3, 1, d3);
  {
    auto store = VersionStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    auto view2 = (*store)->Bring(*ReadChainMembers(root, 2));
    ASSERT_TRUE(view2.ok()) << view2.status();
    ExpectAll(**view2, v2, 20000);
    auto view3 = (*store)->Bring(*ReadChainMembers(root, 3));
    ASSERT_TRUE(view3.ok()) << view3.status();
    ExpectAll(**view3, v3, 20000);
    ExpectAll(**view2, v2, 20000);
  }
  {
    auto store = VersionStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    auto view3 = (*store)->Bring(*ReadChainMembers(root, 3));
    ASSERT_TRUE(view3.ok()) << view3.status();
    ExpectAll(**view3, v3, 20000);
  }
  // Another shard's store in the same directory does not take these rows:
  // it needs the base's files.
  VersionStoreOptions other = options;
  other.keep = [](uint64_t key) { return key % 2 == 0; };
  other.keep_id = "even keys";
  {
    auto store = VersionStore::Open(other);
    ASSERT_TRUE(store.ok()) << store.status();
    auto view = (*store)->Bring(*ReadChainMembers(root, 3));
    ASSERT_FALSE(view.ok());
    EXPECT_TRUE(absl::StrContains(view.status().message(), "sparse-0000"))
        << view.status();
  }
  // A new base in the versions root: loaded afresh.
  Rows v4;
  for (uint64_t k = 1; k <= 3000; ++k) v4[k * 2] = RowOf(k, 4);
  Publish(root, 4, 4, v4);
  auto store = VersionStore::Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  auto view4 = (*store)->Bring(*ReadChainMembers(root, 4));
  ASSERT_TRUE(view4.ok()) << view4.status();
  ExpectAll(**view4, v4, 6000);
}

TEST(VersionStore, KeepsOnlyTheKeysOfItsShards) {
  const std::string root = Tmp() + "/store-keep/versions";
  Rows v1, even;
  for (uint64_t k = 1; k <= 3000; ++k) {
    v1[k] = RowOf(k, 1);
    if (k % 2 == 0) even[k] = v1[k];
  }
  Publish(root, 1, 1, v1);
  VersionStoreOptions options;
  options.dir = Tmp() + "/store-keep/store";
  options.keep = [](uint64_t key) { return key % 2 == 0; };
  auto store = VersionStore::Open(options);
  ASSERT_TRUE(store.ok());
  auto view = (*store)->Bring(*ReadChainMembers(root, 1));
  ASSERT_TRUE(view.ok()) << view.status();
  ExpectAll(**view, even, 3000);
}

// `sampan serve` with a store.
ServingOptions StoreOptions(const std::string& model, const std::string& name) {
  ServingOptions o = servetest::OptionsFor(model);
  o.store_dir = Tmp() + "/stores/" + name;
  o.memory_budget_bytes = 4 << 20;
  return o;
}

TEST(StoreServing, EveryModelKindServesAsEvalScores) {
  JobConfig lr = servetest::TrainTiny("store-lr", LR, [](JobConfig* c) {
    c->mutable_data()->set_min_feature_count(3);
  });
  servetest::ExpectServeEqualsEval(StoreOptions(ModelDir(lr), "lr"));
  JobConfig fm = servetest::TrainTiny("store-fm", FM);
  servetest::ExpectServeEqualsEval(StoreOptions(ModelDir(fm), "fm"));
  JobConfig dcn = servetest::TrainTiny("store-dcn", DCN_V2);
  servetest::ExpectServeEqualsEval(StoreOptions(ModelDir(dcn), "dcn"));
  JobConfig deepfm =
      servetest::TrainTiny("store-deepfm", DEEPFM, [](JobConfig* c) {
        c->mutable_data()->set_integer_features(
            DataConfig::BUCKETS_AND_LOG_DENSE);
      });
  servetest::ExpectServeEqualsEval(StoreOptions(ModelDir(deepfm), "deepfm"));
  // A base and a delta with updates and deletions.
  servetest::PublishScaled(deepfm, 1, 1.0f);
  servetest::PublishDelta(deepfm, 2, 1, 0.5f);
  servetest::ExpectServeEqualsEval(
      StoreOptions(VersionsRoot(deepfm), "deepfm-versions"));
}

TEST(StoreServing, SwapsUnderLoadAndRefusesACorruptDelta) {
  JobConfig job = servetest::TrainTiny("store-swap", FM);
  const std::string root = VersionsRoot(job);
  const std::string copy = Tmp() + "/store-swap-copy";
  servetest::PublishScaled(job, 1, 1.0f);
  // Each version's answers, from a copy of the versions published first.
  servetest::PublishScaled(job, 1, 1.0f, copy);
  servetest::PublishDelta(job, 2, 1, 0.5f, copy);
  servetest::PublishScaled(job, 3, 0.25f, copy);
  const std::vector<std::vector<float>> want = {
      {},
      servetest::EvalProbs(VersionDir(copy, 1)),
      servetest::EvalProbs(VersionDir(copy, 2)),
      servetest::EvalProbs(VersionDir(copy, 3))};
  servetest::Server server(StoreOptions(root, "swap"));
  server.service().Start();
  for (int i = 0; i < 500 && !server.service().ready(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(server.service().ready());

  // A delta, then a new base, published while clients call.
  std::atomic<bool> stop{false};
  servetest::LoadResult load;
  std::thread clients(
      [&] { load = servetest::RunLoad(&server, want, 4, &stop); });
  auto wait_for = [&](uint64_t version) {
    for (int i = 0; i < 500 && server.service().Current()->version != version;
         ++i) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    absl::SleepFor(absl::Milliseconds(200));
  };
  absl::SleepFor(absl::Milliseconds(200));
  servetest::PublishDelta(job, 2, 1, 0.5f);
  wait_for(2);
  servetest::PublishScaled(job, 3, 0.25f);
  wait_for(3);
  stop = true;
  clients.join();
  EXPECT_EQ(server.service().Current()->version, 3u);
  EXPECT_EQ(load.failures, 0);
  EXPECT_EQ(load.mixed, 0);
  EXPECT_GT(load.by_version[1], 0);
  EXPECT_GT(load.by_version[2], 0);
  EXPECT_GT(load.by_version[3], 0);

  // Delta 4 with a byte of its part flipped: refused, 3 keeps serving.
  server.service().Stop();
  servetest::PublishDelta(job, 4, 3, 2.0f);
  servetest::FlipByte(VersionDir(root, 4) + "/sparse-00000.bin", 40);
  absl::Status refused = server.service().Refresh();
  EXPECT_TRUE(absl::StrContains(refused.message(), "sparse-00000.bin"))
      << refused;
  EXPECT_EQ(server.service().Current()->version, 3u);
  const std::vector<std::string> lines = servetest::TestLines();
  serving::PredictResponse response;
  ASSERT_TRUE(servetest::PredictLines(&server, lines, 0, 50, &response).ok());
  EXPECT_EQ(response.version(), 3u);
  for (int i = 0; i < 50; ++i) {
    ASSERT_NEAR(response.probabilities(i), want[3][i], 1e-6) << i;
  }
  EXPECT_GT(servetest::MetricValue("sampan_serving_store_bytes"), 0);
  EXPECT_GT(servetest::MetricValue("sampan_serving_store_memory_bytes"), 0);
  EXPECT_GT(servetest::MetricValue("sampan_serving_store_hot_rows"), 0);
  EXPECT_GT(servetest::MetricValue("sampan_serving_store_hot_hit_ratio"), 0);
}

}  // namespace
}  // namespace sampan
