#include "coordinator/checkpoint_store.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

std::string Root(const char* name) {
  const std::string root =
      std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR")
                                             : "/tmp") +
      "/" + name;
  fs::remove_all(root);
  fs::create_directories(root);
  return root;
}

void WriteFile(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A checkpoint with one snapshot file and a manifest naming it.
void MakeCheckpoint(const std::string& root, uint64_t epoch) {
  const std::string dir = CheckpointDir(root, epoch);
  WriteFile(dir + "/pserver-0/000001.sst",
            "rows of epoch " + std::to_string(epoch));
  coord::CheckpointManifest m;
  m.set_epoch(epoch);
  m.add_trainers()->set_byte_offset(100 * epoch);
  ASSERT_TRUE(WriteManifest(dir, &m).ok());
}

// A pserver digests its own snapshot (its Checkpoint answer lists the
// files): the manifest keeps what it was given for them and reads only the
// rest.
TEST(CheckpointStore, FilesListedAlreadyAreKeptNotRead) {
  const std::string dir = CheckpointDir(Root("listed"), 1);
  WriteFile(dir + "/pserver-0/000001.sst", "rows");
  WriteFile(dir + "/job.pbtxt", "name: 'x'");
  coord::CheckpointManifest m;
  coord::ManifestFile* given = m.add_files();
  given->set_path("pserver-0/000001.sst");
  given->set_size(4);
  given->set_crc32(12345);  // not the file's: kept, so not read here
  ASSERT_TRUE(WriteManifest(dir, &m).ok());
  ASSERT_EQ(m.files_size(), 2);
  EXPECT_EQ(m.files(0).path(), "job.pbtxt");
  EXPECT_EQ(m.files(1).path(), "pserver-0/000001.sst");
  EXPECT_EQ(m.files(1).crc32(), 12345u);
}

TEST(CheckpointStore, ManifestListsFilesAndRoundTrips) {
  const std::string root = Root("roundtrip");
  MakeCheckpoint(root, 4);
  auto m = ReadManifest(CheckpointDir(root, 4));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->epoch(), 4u);
  ASSERT_EQ(m->files_size(), 1);
  EXPECT_EQ(m->files(0).path(), "pserver-0/000001.sst");
  EXPECT_EQ(m->files(0).size(), 15u);
  EXPECT_EQ(m->trainers(0).byte_offset(), 400u);
  EXPECT_FALSE(fs::exists(CheckpointDir(root, 4) + "/MANIFEST.tmp"));
}

TEST(CheckpointStore, LatestSkipsIncompleteAndCorrupt) {
  const std::string root = Root("latest");
  EXPECT_TRUE(absl::IsNotFound(LatestCompleteCheckpoint(root).status()));
  MakeCheckpoint(root, 1);
  MakeCheckpoint(root, 2);
  // Epoch 3 never got its manifest (the job died while taking it).
  WriteFile(CheckpointDir(root, 3) + "/pserver-0/x.sst", "partial");
  EXPECT_EQ(*LatestCompleteCheckpoint(root), CheckpointDir(root, 2));
  EXPECT_EQ(MaxCheckpointEpoch(root), 3u);
  // A flipped byte in epoch 2 (same size): its crc32 no longer matches.
  WriteFile(CheckpointDir(root, 2) + "/pserver-0/000001.sst",
            "rows of epoch 3");
  auto m = ReadManifest(CheckpointDir(root, 2));
  EXPECT_TRUE(absl::IsDataLoss(m.status())) << m.status();
  EXPECT_NE(m.status().message().find("crc32"), std::string::npos);
  EXPECT_EQ(*LatestCompleteCheckpoint(root), CheckpointDir(root, 1));
}

TEST(CheckpointStore, PruneKeepsNewestComplete) {
  const std::string root = Root("prune");
  for (uint64_t e = 1; e <= 4; ++e) MakeCheckpoint(root, e);
  WriteFile(CheckpointDir(root, 2) + "/MANIFEST", "");  // unreadable, kept
  fs::remove(CheckpointDir(root, 3) + "/MANIFEST");     // incomplete, old
  WriteFile(CheckpointDir(root, 5) + "/pserver-0/x", "in progress");
  PruneCheckpoints(root, 2);
  EXPECT_FALSE(fs::exists(CheckpointDir(root, 1)));
  EXPECT_TRUE(fs::exists(CheckpointDir(root, 2)));
  EXPECT_FALSE(fs::exists(CheckpointDir(root, 3)));
  EXPECT_TRUE(fs::exists(CheckpointDir(root, 4)));
  EXPECT_TRUE(fs::exists(CheckpointDir(root, 5)));  // newer than the newest
}

TEST(CheckpointStore, JobConfigAndResolve) {
  const std::string root = Root("resolve");
  EXPECT_FALSE(IsCheckpointPath(root));
  // A checkpoint of before job.pbtxt: NotFound saying so.
  MakeCheckpoint(root, 1);
  auto old = ReadCheckpointConfig(CheckpointDir(root, 1));
  EXPECT_TRUE(absl::IsNotFound(old.status()));
  EXPECT_NE(old.status().message().find("recorded"), std::string::npos);
  // A new one: the config beside the snapshots, listed in the manifest.
  const std::string dir = CheckpointDir(root, 2);
  JobConfig config;
  config.set_name("ckpt-job");
  config.mutable_table()->set_num_shards(16);
  WriteFile(dir + "/pserver-0/000001.sst", "rows");
  ASSERT_TRUE(WriteCheckpointConfig(dir, config).ok());
  coord::CheckpointManifest m;
  ASSERT_TRUE(WriteManifest(dir, &m).ok());
  EXPECT_EQ(m.files(0).path(), "job.pbtxt");
  auto read = ReadCheckpointConfig(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->name(), "ckpt-job");
  EXPECT_EQ(read->table().num_shards(), 16u);
  // A root resolves to its newest complete checkpoint, a directory to
  // itself once its files verify.
  EXPECT_TRUE(IsCheckpointPath(root));
  EXPECT_TRUE(IsCheckpointPath(dir));
  EXPECT_FALSE(IsCheckpointPath(dir + "/pserver-0"));
  EXPECT_EQ(*ResolveCheckpoint(root), dir);
  EXPECT_EQ(*ResolveCheckpoint(CheckpointDir(root, 1)), CheckpointDir(root, 1));
  WriteFile(dir + "/pserver-0/000001.sst", "ROWS");  // same size, other crc
  auto corrupt = ResolveCheckpoint(dir);
  EXPECT_TRUE(absl::IsDataLoss(corrupt.status())) << corrupt.status();
  EXPECT_EQ(*ResolveCheckpoint(dir, /*verify=*/false), dir);
  EXPECT_EQ(*ResolveCheckpoint(root), CheckpointDir(root, 1));
}

}  // namespace
}  // namespace sampan
