#include "trainer/model_version.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "gtest/gtest.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

constexpr int kDim = 3;
constexpr int kParts = 2;

using Rows = std::map<uint64_t, std::vector<float>>;

std::string Root(const char* name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + name;
  fs::remove_all(dir);
  return dir + "/versions";
}

JobConfig Config() {
  JobConfig config;
  config.set_name("versions-test");
  return config;
}

// Writes `rows` into the staging directory of `version` as the trainers do:
// part p holds the keys with key % kParts == p; dense.bin is opaque here.
void Stage(const std::string& root, uint64_t version, const Rows& rows) {
  ASSERT_TRUE(ClearStaging(root, version).ok());
  const std::string dir = StagingDir(root, version);
  for (int part = 0; part < kParts; ++part) {
    std::vector<uint64_t> keys;
    for (const auto& [key, row] : rows) {
      if (key % kParts == uint64_t(part)) keys.push_back(key);
    }
    RowReader read = [&rows](absl::Span<const uint64_t> keys, float* out) {
      for (uint64_t key : keys) {
        out = std::copy(rows.at(key).begin(), rows.at(key).end(), out);
      }
      return absl::OkStatus();
    };
    ASSERT_TRUE(ExportSparsePart(dir, part, keys, kDim, read).ok());
  }
  std::ofstream(DenseModelPath(dir)) << "dense weights of " << version;
}

absl::Status Publish(const std::string& root, uint64_t version, uint64_t base,
                     const Rows& rows, uint32_t keep_bases = 0) {
  Stage(root, version, rows);
  VersionInfo info;
  info.version = version;
  info.base = version == base;
  info.base_version = base;
  info.pass = "20261201/" + std::to_string(version);
  info.pass_index = version;
  info.marker_unix_seconds = 1000 + version;
  ModelManifest manifest;
  manifest.sparse_parts = kParts;
  return PublishVersion(root, Config(), manifest, info, keep_bases);
}

// Applies a delta to `rows` as a reader must: rows of zeros delete.
void ApplyDelta(const Rows& delta, Rows* rows) {
  for (const auto& [key, row] : delta) {
    bool zero = true;
    for (float x : row) zero &= x == 0.0f;
    if (zero) {
      rows->erase(key);
    } else {
      (*rows)[key] = row;
    }
  }
}

// Expects `sparse` to hold exactly `want`, bit for bit.
void ExpectRows(const SparseRows& sparse, const Rows& want) {
  ASSERT_EQ(sparse.row_dim, kDim);
  EXPECT_EQ(sparse.index.size(), want.size());
  EXPECT_EQ(sparse.rows.size(), sparse.index.size() * kDim);
  for (const auto& [key, row] : want) {
    auto it = sparse.index.find(key);
    ASSERT_NE(it, sparse.index.end()) << "key " << key;
    EXPECT_EQ(std::memcmp(sparse.rows.data() + size_t(it->second) * kDim,
                          row.data(), kDim * sizeof(float)),
              0)
        << "key " << key;
  }
}

// The numbers of the published versions under `root`.
std::vector<uint64_t> Published(const std::string& root) {
  absl::StatusOr<std::vector<VersionManifest>> versions = ListVersions(root);
  std::vector<uint64_t> out;
  if (!versions.ok()) {
    ADD_FAILURE() << versions.status();
    return out;
  }
  for (const VersionManifest& m : *versions) {
    out.push_back(m.version());
  }
  return out;
}

void FlipByte(const std::string& path, size_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c = 0;
  f.read(&c, 1);
  c ^= 0x20;
  f.seekp(offset);
  f.write(&c, 1);
}

// A base of 40 keys, a delta changing and adding some, and a second delta.
struct Chain {
  Rows base, delta2, delta3;
  Chain() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (uint64_t k = 1; k <= 40; ++k) {
      base[k * 7919] = {float(k), -0.0f, 1.0f / float(k)};
    }
    delta2[7919] = {9, 9, 9};          // changed
    delta2[5] = {0.5f, nan, -0.0f};    // added; NaN and -0 kept bitwise
    delta2[2 * 7919] = {0, -0.0f, 0};  // deleted
    delta3[5] = {0.25f, 1e-30f, 3};    // changed again
    delta3[6] = {1, 2, 3};             // added
    delta3[3 * 7919] = {0, 0, 0};      // deleted
  }
  Rows MergedTo(uint64_t version) const {
    Rows rows = base;
    if (version >= 2) ApplyDelta(delta2, &rows);
    if (version >= 3) ApplyDelta(delta3, &rows);
    return rows;
  }
  void Publish(const std::string& root, uint32_t keep = 0) const {
    ASSERT_TRUE(sampan::Publish(root, 1, 1, base, keep).ok());
    ASSERT_TRUE(sampan::Publish(root, 2, 1, delta2, keep).ok());
    ASSERT_TRUE(sampan::Publish(root, 3, 1, delta3, keep).ok());
  }
};

TEST(ModelVersion, BaseAndDeltasMergeBitwise) {
  const std::string root = Root("merge");
  const Chain chain;
  chain.Publish(root);
  for (uint64_t v = 1; v <= 3; ++v) {
    absl::StatusOr<LoadedModel> model = ReadVersion(root, v);
    ASSERT_TRUE(model.ok()) << model.status();
    ExpectRows(model->sparse, chain.MergedTo(v));
    ASSERT_TRUE(model->version.has_value());
    EXPECT_EQ(model->version->version(), v);
    EXPECT_EQ(model->version->base_version(), 1u);
    EXPECT_EQ(model->dir, VersionDir(root, v));
    EXPECT_EQ(model->config.name(), "versions-test");
    EXPECT_EQ(model->manifest.sparse_parts, kParts);
  }
  // What a user may name: the root (LATEST), a version directory, v-N.
  auto latest = ReadModel(root);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->version->version(), 3u);
  EXPECT_EQ(DescribeModel(*latest),
            "v-000003 (delta on base v-000001, pass 20261201/3) in " + root);
  auto v2 = ReadModel(VersionDir(root, 2) + "/");
  ASSERT_TRUE(v2.ok()) << v2.status();
  ExpectRows(v2->sparse, chain.MergedTo(2));
  auto short_name = ReadModel(root + "/v-2");
  ASSERT_TRUE(short_name.ok()) << short_name.status();
  EXPECT_EQ(short_name->version->version(), 2u);
}

TEST(ModelVersion, ManifestListsFilesAndRows) {
  const std::string root = Root("manifest");
  const Chain chain;
  chain.Publish(root);
  absl::StatusOr<std::vector<VersionManifest>> versions = ListVersions(root);
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_EQ(versions->size(), 3u);
  const VersionManifest& base = (*versions)[0];
  EXPECT_EQ(base.kind(), VersionManifest::BASE);
  EXPECT_EQ(base.base_version(), 1u);
  EXPECT_EQ(base.rows(), 40u);
  EXPECT_EQ(base.pass(), "20261201/1");
  EXPECT_EQ(base.marker_unix_seconds(), 1001);
  EXPECT_GT(base.created_unix_seconds(), 1.7e9);
  std::vector<std::string> paths;
  for (const VersionFile& f : base.files()) paths.push_back(f.path());
  EXPECT_EQ(paths,
            (std::vector<std::string>{"MODEL", "dense.bin", "job.pbtxt",
                                      "sparse-00000.bin", "sparse-00001.bin"}));
  EXPECT_EQ((*versions)[1].kind(), VersionManifest::DELTA);
  EXPECT_EQ((*versions)[1].rows(), 3u);
  EXPECT_FALSE(fs::exists(StagingDir(root, 3)));
  // A base reads as a plain exported model too.
  JobConfig config;
  EXPECT_TRUE(ReadModelManifest(VersionDir(root, 1), &config).ok());
}

TEST(ModelVersion, ZeroRowDeletesKeyFromTheChainAndFromABase) {
  const std::string root = Root("zeros");
  Rows base = {{1, {1, 2, 3}}, {2, {4, 5, 6}}, {3, {0, -0.0f, 0}}};
  ASSERT_TRUE(Publish(root, 1, 1, base).ok());
  ASSERT_TRUE(Publish(root, 2, 1, {{2, {-0.0f, -0.0f, -0.0f}}}).ok());
  auto model = ReadVersion(root, 2);
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectRows(model->sparse, {{1, {1, 2, 3}}});
  // Deleted, then back.
  ASSERT_TRUE(Publish(root, 3, 1, {{2, {7, 0, 0}}}).ok());
  model = ReadVersion(root, 3);
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectRows(model->sparse, {{1, {1, 2, 3}}, {2, {7, 0, 0}}});
}

TEST(ModelVersion, LatestMovesWithEachPublish) {
  const std::string root = Root("latest");
  EXPECT_TRUE(absl::IsNotFound(LatestVersion(root).status()));
  EXPECT_TRUE(Published(root).empty());
  const Chain chain;
  ASSERT_TRUE(Publish(root, 1, 1, chain.base).ok());
  EXPECT_EQ(*LatestVersion(root), 1u);
  ASSERT_TRUE(Publish(root, 2, 1, chain.delta2).ok());
  EXPECT_EQ(*LatestVersion(root), 2u);
  std::ifstream in(root + "/LATEST");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "v-000002\n");
  EXPECT_FALSE(fs::exists(root + "/LATEST.tmp"));
}

TEST(ModelVersion, RetentionKeepsTheNewestBasesAndTheirDeltas) {
  const std::string root = Root("retention");
  const Chain chain;
  chain.Publish(root, /*keep=*/1);
  ASSERT_TRUE(Publish(root, 4, 4, chain.MergedTo(3), 1).ok());
  ASSERT_TRUE(Publish(root, 5, 4, chain.delta2, 1).ok());
  EXPECT_EQ(Published(root), (std::vector<uint64_t>{4, 5}));
  EXPECT_FALSE(fs::exists(VersionDir(root, 1)));
  EXPECT_FALSE(fs::exists(VersionDir(root, 3)));
  Rows want = chain.MergedTo(3);
  ApplyDelta(chain.delta2, &want);
  auto model = ReadVersion(root, 5);
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectRows(model->sparse, want);
  // Two bases kept: nothing more goes until a third base.
  ASSERT_TRUE(Publish(root, 6, 6, want, 2).ok());
  EXPECT_EQ(Published(root), (std::vector<uint64_t>{4, 5, 6}));
  ASSERT_TRUE(Publish(root, 7, 7, want, 2).ok());
  EXPECT_EQ(Published(root), (std::vector<uint64_t>{6, 7}));
}

TEST(ModelVersion, PublishingAgainReplacesAndWithdrawsNewer) {
  const std::string root = Root("republish");
  const Chain chain;
  chain.Publish(root);
  // A job resumed from the checkpoint of pass 1 trains pass 2 again.
  const Rows again = {{5, {1, 1, 1}}};
  ASSERT_TRUE(Publish(root, 2, 1, again).ok());
  EXPECT_EQ(*LatestVersion(root), 2u);
  EXPECT_FALSE(fs::exists(VersionDir(root, 3)));
  EXPECT_FALSE(fs::exists(StagingDir(root, 2)));
  Rows want = chain.base;
  ApplyDelta(again, &want);
  auto model = ReadVersion(root, 2);
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectRows(model->sparse, want);
  // And once more, now as the newest version.
  ASSERT_TRUE(Publish(root, 2, 1, chain.delta2).ok());
  model = ReadVersion(root, 2);
  ASSERT_TRUE(model.ok()) << model.status();
  ExpectRows(model->sparse, chain.MergedTo(2));
  EXPECT_EQ(Published(root), (std::vector<uint64_t>{1, 2}));
}

TEST(ModelVersion, CorruptFileIsDataLossNamingIt) {
  const std::string root = Root("corrupt");
  const Chain chain;
  chain.Publish(root);
  const std::string part = VersionDir(root, 2) + "/sparse-00001.bin";
  FlipByte(part, 40);
  absl::Status s = ReadVersion(root, 3).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find(part), std::string::npos) << s;
  // Version 1 does not need it.
  EXPECT_TRUE(ReadVersion(root, 1).ok());
  const std::string dense = DenseModelPath(VersionDir(root, 3));
  std::ofstream(dense, std::ios::app) << "x";
  s = ReadModel(root).status();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
}

TEST(ModelVersion, BrokenChainIsNotFoundNamingTheVersion) {
  const std::string root = Root("broken");
  const Chain chain;
  chain.Publish(root);
  fs::remove_all(VersionDir(root, 1));
  absl::Status s = ReadVersion(root, 3).status();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_NE(s.message().find("version 1 (" + VersionDir(root, 1) + ")"),
            std::string::npos)
      << s;
  // A delta needs its base, published.
  s = Publish(root, 4, 1, chain.delta2);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_FALSE(fs::exists(VersionDir(root, 4)));
  EXPECT_EQ(*LatestVersion(root), 3u);
  EXPECT_TRUE(absl::IsNotFound(ReadVersion(root, 9).status()));
}

TEST(ModelVersion, DeltaNeedsEveryVersionSinceItsBase) {
  const std::string root = Root("gap");
  const Chain chain;
  ASSERT_TRUE(Publish(root, 1, 1, chain.base).ok());
  absl::Status s = Publish(root, 3, 1, chain.delta3);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("v-000002"), std::string::npos) << s;
  s = Publish(root, 2, 2 + 1, chain.delta2);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
}

TEST(ModelVersion, IncompleteStagingIsRefused) {
  const std::string root = Root("incomplete");
  Stage(root, 1, {{1, {1, 2, 3}}});
  fs::remove(StagingDir(root, 1) + "/sparse-00001.bin");
  VersionInfo info;
  info.version = 1;
  info.base = true;
  ModelManifest manifest;
  manifest.sparse_parts = kParts;
  absl::Status s = PublishVersion(root, Config(), manifest, info, 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_NE(s.message().find("sparse-00001.bin"), std::string::npos) << s;
  fs::remove(DenseModelPath(StagingDir(root, 1)));
  s = PublishVersion(root, Config(), manifest, info, 0);
  EXPECT_NE(s.message().find("dense.bin"), std::string::npos) << s;
  EXPECT_FALSE(fs::exists(VersionDir(root, 1)));
}

TEST(ModelVersion, DirectoryWithoutVersionIsNeverRead) {
  const std::string root = Root("staging");
  const Chain chain;
  ASSERT_TRUE(Publish(root, 1, 1, chain.base).ok());
  // A staging directory holding a complete model but no VERSION yet.
  Stage(root, 2, chain.delta2);
  ModelManifest manifest;
  manifest.sparse_parts = kParts;
  ASSERT_TRUE(FinishModelDir(StagingDir(root, 2), Config(), manifest).ok());
  absl::Status s = ReadModel(StagingDir(root, 2)).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  // The same under a version's name (a crash mid-delete leaves one).
  fs::rename(StagingDir(root, 2), VersionDir(root, 2));
  s = ReadModel(VersionDir(root, 2)).status();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_NE(s.message().find("not published"), std::string::npos) << s;
  EXPECT_EQ(Published(root), std::vector<uint64_t>{1});
  EXPECT_EQ(ReadModel(root)->version->version(), 1u);
}

TEST(ModelVersion, ExportedModelReadsAsItIs) {
  const std::string root = Root("plain");
  const std::string dir = fs::path(root).parent_path().string() + "/model";
  Stage(root, 1, {{1, {1, 2, 3}}, {2, {0, 0, 0}}});
  fs::rename(StagingDir(root, 1), dir);
  ModelManifest manifest;
  manifest.sparse_parts = kParts;
  ASSERT_TRUE(FinishModelDir(dir, Config(), manifest).ok());
  auto model = ReadModel(dir);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE(model->version.has_value());
  EXPECT_EQ(DescribeModel(*model), dir);
  ExpectRows(model->sparse, {{1, {1, 2, 3}}, {2, {0, 0, 0}}});
}

TEST(ModelVersion, ChainKeysPartitionTheMergedKeys) {
  const std::string root = Root("keys");
  const Chain chain;
  chain.Publish(root);
  const Rows merged = chain.MergedTo(3);
  std::vector<uint64_t> all;
  for (int part = 0; part < 3; ++part) {
    absl::StatusOr<std::vector<uint64_t>> keys = ChainKeys(root, 3, part, 3);
    ASSERT_TRUE(keys.ok()) << keys.status();
    EXPECT_TRUE(std::is_sorted(keys->begin(), keys->end()));
    for (uint64_t key : *keys) EXPECT_EQ(key % 3, uint64_t(part));
    all.insert(all.end(), keys->begin(), keys->end());
  }
  std::sort(all.begin(), all.end());
  std::vector<uint64_t> want;
  for (const auto& entry : merged) want.push_back(entry.first);
  EXPECT_EQ(all, want);
  EXPECT_TRUE(absl::IsInvalidArgument(ChainKeys(root, 3, 3, 3).status()));
}

}  // namespace
}  // namespace sampan
