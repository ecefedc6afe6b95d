#include "sparse_table/redo_log.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"
#include "sparse_table/crc32c.h"

namespace sampan {
namespace {

std::string TempDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(tmp ? tmp : "/tmp") + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

// Records read back on open: (lsn, body).
std::vector<std::pair<uint64_t, std::string>> Reopen(
    const RedoLog::Options& o, absl::Status* status,
    std::unique_ptr<RedoLog>* keep = nullptr) {
  std::vector<std::pair<uint64_t, std::string>> got;
  auto log = RedoLog::Open(o, 0, [&](uint64_t lsn, absl::string_view body) {
    got.emplace_back(lsn, std::string(body));
    return absl::OkStatus();
  });
  *status = log.status();
  if (log.ok() && keep != nullptr) *keep = *std::move(log);
  return got;
}

void AppendAll(RedoLog& log, const std::vector<std::string>& bodies) {
  uint64_t last = 0;
  for (const std::string& b : bodies) {
    std::string r = RedoLog::NewRecord(b.size());
    r += b;
    last = log.Append(std::move(r));
  }
  ASSERT_TRUE(log.WaitDurable(last).ok());
}

std::vector<std::string> Segments(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Crc32cTest, KnownValuesAndBothPathsAgree) {
  // RFC 3720 B.4 test vectors.
  EXPECT_EQ(crc32c::Value("123456789", 9), 0xe3069283u);
  std::string zeros(32, '\0');
  EXPECT_EQ(crc32c::Value(zeros.data(), 32), 0x8a9136aau);
  std::string data;
  for (int i = 0; i < 1000; ++i) data.push_back(char(i * 7));
  for (size_t n : {0, 1, 7, 8, 9, 63, 1000}) {
    EXPECT_EQ(crc32c::Value(data.data(), n),
              crc32c::ExtendPortable(0, data.data(), n));
  }
  EXPECT_EQ(crc32c::Extend(crc32c::Value(data.data(), 10), &data[10], 990),
            crc32c::Value(data.data(), 1000));
  EXPECT_EQ(crc32c::Unmask(crc32c::Mask(0x12345678u)), 0x12345678u);
}

TEST(RedoLogTest, RecordsRoundTripAcrossSegmentsInLsnOrder) {
  RedoLog::Options o;
  o.dir = TempDir("redo_roundtrip");
  o.segment_bytes = 100;  // a few records per segment
  std::vector<std::string> bodies;
  for (int i = 0; i < 50; ++i)
    bodies.push_back(std::string(i, char('a' + i % 26)));
  {
    absl::Status st;
    std::unique_ptr<RedoLog> log;
    EXPECT_TRUE(Reopen(o, &st, &log).empty());
    ASSERT_TRUE(st.ok()) << st;
    AppendAll(*log, bodies);
    EXPECT_EQ(log->last_lsn(), 50u);
  }
  EXPECT_GT(Segments(o.dir).size(), 5u);
  absl::Status st;
  std::unique_ptr<RedoLog> log;
  auto got = Reopen(o, &st, &log);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(got.size(), bodies.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, i + 1);
    EXPECT_EQ(got[i].second, bodies[i]);
  }
  // Appends continue after the last LSN.
  std::string r = RedoLog::NewRecord(1);
  r += "z";
  EXPECT_EQ(log->Append(std::move(r)), 51u);
}

// Writes 3 records in one segment, then lets `damage` edit the file.
std::string ThreeRecords(const std::string& name, RedoLog::Options* o) {
  o->dir = TempDir(name);
  absl::Status st;
  std::unique_ptr<RedoLog> log;
  Reopen(*o, &st, &log);
  EXPECT_TRUE(st.ok()) << st;
  AppendAll(*log, {"first", "second", "third"});
  log.reset();
  std::vector<std::string> segs = Segments(o->dir);
  return segs.front();  // the first segment holds all three
}

TEST(RedoLogTest, TornLastRecordIsIgnoredAndLoggingContinues) {
  RedoLog::Options o;
  const std::string seg = ThreeRecords("redo_torn", &o);
  const auto size = std::filesystem::file_size(seg);
  std::filesystem::resize_file(seg, size - 3);  // a crash mid-write
  absl::Status st;
  std::unique_ptr<RedoLog> log;
  auto got = Reopen(o, &st, &log);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].second, "second");
  AppendAll(*log, {"fourth"});
  log.reset();
  got = Reopen(o, &st);
  ASSERT_TRUE(st.ok()) << st;  // the torn bytes were cut, not left in between
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].first, 3u);
  EXPECT_EQ(got[2].second, "fourth");
}

TEST(RedoLogTest, ZeroFilledTailIsTorn) {
  RedoLog::Options o;
  const std::string seg = ThreeRecords("redo_zeros", &o);
  {
    std::ofstream(seg, std::ios::app | std::ios::binary)
        << std::string(20, '\0');
  }
  absl::Status st;
  EXPECT_EQ(Reopen(o, &st).size(), 3u);
  EXPECT_TRUE(st.ok()) << st;
}

TEST(RedoLogTest, CorruptionInTheMiddleNamesFileAndOffset) {
  RedoLog::Options o;
  const std::string seg = ThreeRecords("redo_corrupt", &o);
  {
    std::fstream f(seg, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8 + 2);  // inside the first record's body ("first")
    f.put('X');
  }
  absl::Status st;
  Reopen(o, &st);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(st.message().find(seg), std::string::npos) << st;
  EXPECT_NE(st.message().find("offset 0"), std::string::npos) << st;
  EXPECT_NE(st.message().find("CRC"), std::string::npos) << st;
}

TEST(RedoLogTest, DeleteBelowKeepsTheRecordsAtOrAboveIt) {
  RedoLog::Options o;
  o.dir = TempDir("redo_delete");
  o.segment_bytes = 64;
  absl::Status st;
  std::unique_ptr<RedoLog> log;
  Reopen(o, &st, &log);
  std::vector<std::string> bodies(20, std::string(40, 'b'));
  AppendAll(*log, bodies);
  const size_t before = Segments(o.dir).size();
  ASSERT_TRUE(log->DeleteBelow(11).ok());
  EXPECT_LT(Segments(o.dir).size(), before);
  log.reset();
  auto got = Reopen(o, &st, &log);
  ASSERT_TRUE(st.ok()) << st;
  ASSERT_FALSE(got.empty());
  EXPECT_LE(got.front().first, 11u);
  EXPECT_EQ(got.back().first, 20u);
  ASSERT_TRUE(log->DeleteBelow(21).ok());  // everything: rolls a new segment
  log.reset();
  got = Reopen(o, &st, &log);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(log->last_lsn(), 20u);  // LSNs never go back
}

TEST(RedoLogTest, ConcurrentWritersShareWritesAndEveryRecordArrives) {
  for (bool sync : {false, true}) {
    RedoLog::Options o;
    o.dir = TempDir("redo_concurrent");
    o.sync = sync;
    absl::Status st;
    std::unique_ptr<RedoLog> log;
    Reopen(o, &st, &log);
    ASSERT_TRUE(st.ok()) << st;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&log, t] {
        for (int i = 0; i < 100; ++i) {
          std::string r = RedoLog::NewRecord(8);
          r += std::to_string(t * 1000 + i);
          EXPECT_TRUE(log->WaitDurable(log->Append(std::move(r))).ok());
        }
      });
    }
    for (auto& th : threads) th.join();
    log.reset();
    auto got = Reopen(o, &st);
    ASSERT_EQ(got.size(), 400u);
    std::vector<int> seen;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].first, i + 1);
      seen.push_back(std::stoi(got[i].second));
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());
  }
}

TEST(PushRecordTest, EncodeDecodeRoundTripAndBadSizes) {
  const std::vector<uint64_t> keys = {7, 1ull << 63, 42};
  const std::vector<float> grads = {1, 2, 3, 4, 5, 6}, shows = {1, 2, 3},
                           clicks = {0, 1, 0};
  PushBatch b{keys, grads.data(), shows.data(), clicks.data(), 9, 123};
  std::string body;
  EncodePush(b, 2, &body);
  absl::StatusOr<LoggedPush> p = DecodePush(body);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->writer, 9u);
  EXPECT_EQ(p->sequence, 123u);
  EXPECT_EQ(p->floats_per_key, 2u);
  EXPECT_EQ(p->keys, keys);
  EXPECT_EQ(p->grads, grads);
  EXPECT_EQ(p->shows, shows);
  EXPECT_EQ(p->clicks, clicks);
  EXPECT_EQ(p->batch().keys.size(), 3u);
  absl::StatusOr<LoggedPush> cut = DecodePush(body.substr(0, body.size() - 4));
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(cut.status().message().find("expected"), std::string::npos);
  EXPECT_FALSE(DecodePush("").ok());
}

}  // namespace
}  // namespace sampan
