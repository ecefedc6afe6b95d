#include "cli/resume.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "coordinator/checkpoint_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

using ::testing::HasSubstr;

// A job of one pserver and one trainer with a complete checkpoint whose
// trainer position was taken under `window_rows` and `by_file`.
JobConfig JobWithCheckpoint(const std::string& name, uint32_t window_rows,
                            bool by_file) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  JobConfig config;
  config.set_output_dir(std::string(tmp ? tmp : "/tmp") + "/" + name);
  config.mutable_cluster()->set_num_pservers(1);
  config.mutable_cluster()->set_num_trainers(1);
  config.mutable_table()->set_data_dir(config.output_dir() + "/table");
  const std::string dir = CheckpointDir(CheckpointRoot(config), 1);
  std::filesystem::create_directories(dir + "/pserver-0");
  std::ofstream(dir + "/pserver-0/000001.sst") << "rows";
  coord::CheckpointManifest m;
  m.set_epoch(1);
  m.set_num_pservers(1);
  m.set_num_trainers(1);
  coord::DataPosition* p = m.add_trainers();
  p->set_byte_offset(4096);
  p->set_window_skip(window_rows > 0 ? 17 : 0);
  p->set_window_rows(window_rows);
  p->set_by_file(by_file);
  EXPECT_TRUE(WriteManifest(dir, &m).ok());
  return config;
}

TEST(ResumeTest, RestoresUnderTheSameDataSettings) {
  JobConfig config = JobWithCheckpoint("same", 300, true);
  config.mutable_data()->set_shuffle_buffer_rows(300);
  config.mutable_data()->set_split(DataConfig::BY_FILE);
  absl::StatusOr<std::string> dir = RestoreLatestCheckpoint(config);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_THAT(*dir, HasSubstr("ckpt-1"));
}

// A position is an offset into a window or a file list that these settings
// shape: under others it would point at other rows, so the resume refuses.
TEST(ResumeTest, RefusesOtherDataSettings) {
  JobConfig window = JobWithCheckpoint("window", 300, false);
  window.mutable_data()->set_shuffle_buffer_rows(1000);
  absl::StatusOr<std::string> dir = RestoreLatestCheckpoint(window);
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(dir.status().message(),
              HasSubstr("data.shuffle_buffer_rows 300 and data.split "
                        "BY_LINE_RANGE; this job has 1000 and BY_LINE_RANGE"));

  JobConfig split = JobWithCheckpoint("split", 0, false);
  split.mutable_data()->set_split(DataConfig::BY_FILE);
  dir = RestoreLatestCheckpoint(split);
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(dir.status().message(), HasSubstr("this job has 0 and BY_FILE"));
}

}  // namespace
}  // namespace sampan
