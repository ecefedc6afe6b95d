#include "cli/resume.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "coordinator/checkpoint_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sparse_table/job_options.h"

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
  coord::FleetState fleet;
  absl::StatusOr<std::string> dir = RestoreLatestCheckpoint(config, &fleet);
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_THAT(*dir, HasSubstr("ckpt-1"));
  EXPECT_TRUE(fleet.owner().empty());  // the job's first map
}

// A position is an offset into a window or a file list that these settings
// shape: under others it would point at other rows, so the resume refuses.
TEST(ResumeTest, RefusesOtherDataSettings) {
  JobConfig window = JobWithCheckpoint("window", 300, false);
  window.mutable_data()->set_shuffle_buffer_rows(1000);
  coord::FleetState fleet;
  absl::StatusOr<std::string> dir = RestoreLatestCheckpoint(window, &fleet);
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(dir.status().message(),
              HasSubstr("data.shuffle_buffer_rows 300 and data.split "
                        "BY_LINE_RANGE; this job has 1000 and BY_LINE_RANGE"));

  JobConfig split = JobWithCheckpoint("split", 0, false);
  split.mutable_data()->set_split(DataConfig::BY_FILE);
  dir = RestoreLatestCheckpoint(split, &fleet);
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(dir.status().message(), HasSubstr("this job has 0 and BY_FILE"));
}

// A checkpoint of a rescaled fleet comes back as that fleet: every pserver's
// snapshot restored, and the owners to seed the coordinator with.
TEST(ResumeTest, RestoresARescaledFleet) {
  JobConfig config = JobWithCheckpoint("rescaled", 0, false);
  config.mutable_table()->set_num_shards(4);
  const std::string dir = CheckpointDir(CheckpointRoot(config), 2);
  coord::CheckpointManifest m;
  m.set_epoch(2);
  m.set_num_pservers(2);
  m.set_num_trainers(1);
  for (uint32_t owner : {0, 1, 1, 1}) m.add_shard_owner(owner);
  m.add_trainers();
  for (int i = 0; i < 2; ++i) {
    const std::string ps = dir + "/pserver-" + std::to_string(i);
    std::filesystem::create_directories(ps);
    std::ofstream(ps + "/000001.sst") << "rows of " << i;
  }
  ASSERT_TRUE(WriteManifest(dir, &m).ok());
  coord::FleetState fleet;
  absl::StatusOr<std::string> restored =
      RestoreLatestCheckpoint(config, &fleet);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(fleet.size(), 2u);
  EXPECT_EQ(fleet.wanted(), 2u);
  EXPECT_THAT(fleet.owner(), ::testing::ElementsAre(0, 1, 1, 1));
  for (int i = 0; i < 2; ++i) {
    std::ifstream in(TableOptionsFromJob(config, i).data_dir + "/000001.sst");
    std::string text;
    std::getline(in, text);
    EXPECT_EQ(text, "rows of " + std::to_string(i));
  }
  // The first map, recorded or not, seeds nothing.
  m.clear_shard_owner();
  EXPECT_TRUE(FleetOfCheckpoint(config, m).owner().empty());
  m.set_num_pservers(1);
  for (int s = 0; s < 4; ++s) m.add_shard_owner(0);
  EXPECT_TRUE(FleetOfCheckpoint(config, m).owner().empty());
}

}  // namespace
}  // namespace sampan
