#include "coordinator/id_source.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "gtest/gtest.h"

namespace sampan {
namespace {

std::string TempFile(const std::string& name) {
  const std::string dir =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") +
      "/id_source_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::filesystem::remove(path);
  return path;
}

TEST(IdSourceTest, IdsAreUniqueWithinAndAcrossBlocks) {
  IdSource ids(TempFile("within"));
  std::set<uint64_t> seen;
  for (uint64_t i = 0; i < 3 * IdSource::kBlock + 5; ++i) {
    absl::StatusOr<uint64_t> id = ids.Next();
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_NE(*id, 0u);
    EXPECT_TRUE(seen.insert(*id).second) << "id " << *id << " issued twice";
  }
}

// A restarted coordinator whose clock went back (or stands still) still
// continues past every id the earlier one issued: the file says where.
TEST(IdSourceTest, RestartWithTheFileNeverReusesAnIdWhateverTheClock) {
  const std::string file = TempFile("restart");
  absl::Time clock = absl::FromUnixSeconds(2000000000);
  auto now = [&clock] { return clock; };
  std::set<uint64_t> seen;
  for (int incarnation = 0; incarnation < 4; ++incarnation) {
    IdSource ids(file, now);
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<uint64_t> id = ids.Next();
      ASSERT_TRUE(id.ok()) << id.status();
      EXPECT_TRUE(seen.insert(*id).second)
          << "coordinator incarnation " << incarnation << " reissued " << *id;
    }
    clock -= absl::Hours(1);  // the next one's clock is behind
  }
}

// Without the file, the clock floor puts a later coordinator's ids above.
TEST(IdSourceTest, WithoutTheFileTheClockFloorSeparatesCoordinators) {
  absl::Time clock = absl::FromUnixSeconds(2000000000);
  auto now = [&clock] { return clock; };
  IdSource first("", now);
  uint64_t last = 0;
  for (int i = 0; i < 100; ++i) last = *first.Next();
  clock += absl::Milliseconds(1);
  IdSource second("", now);
  EXPECT_GT(*second.Next(), last);
}

TEST(IdSourceTest, ACorruptFileIsAnErrorNamingIt) {
  const std::string file = TempFile("corrupt");
  std::ofstream(file) << "not a number\n";
  IdSource ids(file);
  absl::StatusOr<uint64_t> id = ids.Next();
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find(file), absl::string_view::npos)
      << id.status();
}

}  // namespace
}  // namespace sampan
