#include "trainer/data/pass_catalog.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace sampan {
namespace {

namespace fs = std::filesystem;

class PassCatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) /
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(root_);
    fs::create_directories(root_);
    stream_.set_root(root_.string());
    stream_.set_pattern("%Y%m%d/%H");
    stream_.set_done_marker("_SUCCESS");
  }
  void Write(const std::string& relative) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << "x\n";
  }
  std::vector<std::string> Names() {
    absl::StatusOr<std::vector<ReadyPass>> passes = ListReadyPasses(stream_);
    EXPECT_TRUE(passes.ok()) << passes.status();
    std::vector<std::string> names;
    for (const ReadyPass& p : *passes) names.push_back(p.name);
    return names;
  }

  fs::path root_;
  StreamConfig stream_;
};

TEST_F(PassCatalogTest, OnlyPassesWithTheirMarkerInTimeOrder) {
  Write("20261202/00/part-00000");
  Write("20261202/00/_SUCCESS");
  Write("20261201/23/part-00000");
  Write("20261201/23/_SUCCESS");
  Write("20261201/22/part-00000");  // no marker yet
  Write("20261201/xx/_SUCCESS");    // not a time
  Write("notes/_SUCCESS");
  EXPECT_EQ(Names(), (std::vector<std::string>{"20261201/23", "20261202/00"}));
  Write("20261201/22/_SUCCESS");
  EXPECT_EQ(Names(), (std::vector<std::string>{"20261201/22", "20261201/23",
                                               "20261202/00"}));
}

TEST_F(PassCatalogTest, PartsSkipMarkersAndHiddenFiles) {
  Write("20261201/05/part-00001.gz");
  Write("20261201/05/part-00000");
  Write("20261201/05/.part-00002.crc");
  Write("20261201/05/_temporary");
  Write("20261201/05/_SUCCESS");
  absl::StatusOr<std::vector<ReadyPass>> passes = ListReadyPasses(stream_);
  ASSERT_TRUE(passes.ok()) << passes.status();
  ASSERT_EQ(passes->size(), 1u);
  const ReadyPass& p = (*passes)[0];
  EXPECT_EQ(p.time.day, "20261201");
  ASSERT_EQ(p.files.size(), 2u);
  EXPECT_EQ(fs::path(p.files[0]).filename(), "part-00000");
  EXPECT_EQ(fs::path(p.files[1]).filename(), "part-00001.gz");
  EXPECT_GT(p.ready_unix_seconds, 1e9);
}

TEST_F(PassCatalogTest, StartAndEndPassBoundTheList) {
  for (const char* h : {"01", "02", "03", "04"}) {
    Write(std::string("20261201/") + h + "/_SUCCESS");
  }
  stream_.set_start_pass("20261201/02");
  stream_.set_end_pass("20261201/03");
  EXPECT_EQ(Names(), (std::vector<std::string>{"20261201/02", "20261201/03"}));
}

TEST_F(PassCatalogTest, MissingRootIsNamed) {
  stream_.set_root((root_ / "nope").string());
  absl::Status s = ListReadyPasses(stream_).status();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_NE(s.message().find("nope"), std::string::npos) << s;
}

}  // namespace
}  // namespace sampan
