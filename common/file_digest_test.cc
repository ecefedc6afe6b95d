#include "common/file_digest.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

std::string Dir(const char* name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(FileDigest, ListsSortedRelativePathsWithSizeAndCrc) {
  const std::string dir = Dir("digest");
  fs::create_directories(dir + "/sub");
  std::ofstream(dir + "/b") << "hello";
  std::ofstream(dir + "/sub/a") << "";
  std::ofstream(dir + "/SKIP") << "x";
  auto files = DigestFiles(dir, {"SKIP"});
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].path, "b");
  EXPECT_EQ((*files)[0].size, 5u);
  EXPECT_EQ((*files)[0].crc32, 0x3610a686u);  // zlib crc32("hello")
  EXPECT_EQ((*files)[1].path, "sub/a");
  EXPECT_EQ((*files)[1].crc32, 0u);
  EXPECT_TRUE(VerifyFile(dir, (*files)[0]).ok());
}

// A checkpoint hard-links the SSTs of the one before: their digests are
// reused, a new file (new inode) is read, and a mutable file always is.
TEST(FileDigest, ACacheReadsOnlyFilesItHasNotSeen) {
  const std::string one = Dir("cache-1"), two = Dir("cache-2");
  std::ofstream(one + "/000001.sst") << "rows rows rows";  // 14 bytes
  std::ofstream(one + "/MANIFEST") << "mf";                // 2 bytes
  DigestCache cache([](const std::string& path) {
    return path.size() > 4 && path.substr(path.size() - 4) == ".sst";
  });
  auto first = DigestFiles(one, {}, &cache);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(cache.bytes_read(), 16u);
  EXPECT_EQ(cache.bytes_reused(), 0u);

  fs::create_hard_link(one + "/000001.sst", two + "/000001.sst");
  std::ofstream(two + "/000002.sst") << "new";  // 3 bytes
  std::ofstream(two + "/MANIFEST") << "mf2";    // 3 bytes
  auto second = DigestFiles(two, {}, &cache);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(cache.bytes_read(), 16u + 6u);  // not the linked SST again
  EXPECT_EQ(cache.bytes_reused(), 14u);
  // The same digests as without a cache.
  auto plain = DigestFiles(two, {});
  ASSERT_TRUE(plain.ok());
  ASSERT_EQ(second->size(), plain->size());
  for (size_t i = 0; i < plain->size(); ++i) {
    EXPECT_EQ((*second)[i].path, (*plain)[i].path);
    EXPECT_EQ((*second)[i].crc32, (*plain)[i].crc32) << (*plain)[i].path;
    EXPECT_EQ((*second)[i].size, (*plain)[i].size);
  }
  // A file replaced under the same name (another size) is read again.
  fs::remove(two + "/000002.sst");
  std::ofstream(two + "/000002.sst") << "NEWER";
  auto third = DigestFiles(two, {}, &cache);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(cache.bytes_read(), 16u + 6u + 8u);
  EXPECT_TRUE(VerifyFile(two, (*third)[1]).ok());
  // Only files the last call saw are kept: one's SST, linked in two, stays.
  auto again = DigestFiles(one, {}, &cache);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(cache.bytes_read(), 16u + 6u + 8u + 2u);
}

TEST(FileDigest, VerifyNamesTheFileThatDiffers) {
  const std::string dir = Dir("verify");
  std::ofstream(dir + "/f") << "hello";
  FileDigest f = (*DigestFiles(dir, {}))[0];
  std::ofstream(dir + "/f") << "jello";
  absl::Status s = VerifyFile(dir, f);
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find(dir + "/f: crc32"), std::string::npos) << s;
  std::ofstream(dir + "/f") << "hi";
  s = VerifyFile(dir, f);
  EXPECT_NE(s.message().find("2 bytes, manifest says 5"), std::string::npos)
      << s;
  fs::remove(dir + "/f");
  EXPECT_TRUE(absl::IsDataLoss(VerifyFile(dir, f)));
}

TEST(FileDigest, WriteFileDurablyReplacesAndLeavesNoTemp) {
  const std::string dir = Dir("durable");
  ASSERT_TRUE(WriteFileDurably(dir + "/LATEST", "v-1\n").ok());
  ASSERT_TRUE(WriteFileDurably(dir + "/LATEST", "v-2\n").ok());
  EXPECT_EQ(Read(dir + "/LATEST"), "v-2\n");
  EXPECT_FALSE(fs::exists(dir + "/LATEST.tmp"));
  absl::Status s = WriteFileDurably(dir + "/missing/LATEST", "x");
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find(dir + "/missing/LATEST.tmp"), std::string::npos);
}

// That the new levels survive a machine crash is tests/crashfs's to show
// (tests/durability_crash_test.sh fails without it).
TEST(FileDigest, CreateDirectoriesDurablyMakesMissingLevels) {
  const std::string dir = Dir("mkdirs");
  ASSERT_TRUE(CreateDirectoriesDurably(dir + "/a/b/c").ok());
  EXPECT_TRUE(fs::is_directory(dir + "/a/b/c"));
  EXPECT_TRUE(CreateDirectoriesDurably(dir + "/a/b/c").ok());  // exists
  std::ofstream(dir + "/file") << "x";
  absl::Status s = CreateDirectoriesDurably(dir + "/file/d");
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find(dir + "/file/d"), std::string::npos) << s;
}

}  // namespace
}  // namespace sampan
