// Multi-process suite for collective/: real rank processes on loopback, a
// coordinator in this process for the rendezvous.
//
// Pass/fail never depends on speed: each child has a generous deadline only
// so that a hang fails the test instead of stalling CI.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/collective_harness.h"

namespace sampan {
namespace testing {
namespace {

constexpr char kWorker[] = "tests/collective_worker";
// Sizes in floats: 1 float .. 64 MiB, with counts that do not divide by 2,
// 3 or 4 ranks (nor by Gloo's chunking).
constexpr char kSizes[] = "1,2,3,5,1000,4097,262147,1048579,16777216";

class CollectiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = TestCoordinator::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    coordinator_ = std::move(*c);
  }

  void TearDown() override {
    for (Child& c : children_) {
      kill(c.pid, SIGKILL);
      kill(c.pid, SIGCONT);
      WaitExit(c.pid, absl::Now() + absl::Seconds(5)).IgnoreError();
      close(c.stdout_fd);
    }
    children_.clear();
  }

  // Starts `n` ranks of the worker with `extra` flags.
  void StartRanks(int n, const std::string& name,
                  const std::vector<std::string>& extra) {
    for (int r = 0; r < n; ++r) {
      std::vector<std::string> args = {
          absl::StrCat("--coordinator=", coordinator_->address()),
          absl::StrCat("--name=", name), absl::StrCat("--rank=", r),
          absl::StrCat("--size=", n)};
      args.insert(args.end(), extra.begin(), extra.end());
      auto child = Spawn(kWorker, args);
      ASSERT_TRUE(child.ok()) << child.status();
      children_.push_back(*child);
    }
  }

  // Waits for every rank to exit and returns their stdout texts; expects
  // exit code 0 from each.
  std::vector<std::string> ExpectAllSucceed(absl::Duration within) {
    const absl::Time deadline = absl::Now() + within;
    std::vector<std::string> outputs;
    for (size_t r = 0; r < children_.size(); ++r) {
      auto code = WaitExit(children_[r].pid, deadline);
      outputs.push_back(ReadAll(children_[r].stdout_fd, absl::Seconds(1)));
      EXPECT_TRUE(code.ok()) << "rank " << r << ": " << code.status();
      if (code.ok()) {
        EXPECT_EQ(*code, 0) << "rank " << r;
      }
    }
    for (Child& c : children_) close(c.stdout_fd);
    children_.clear();
    return outputs;
  }

  std::unique_ptr<TestCoordinator> coordinator_;
  std::vector<Child> children_;
};

// Each CPU transport: shared memory (chosen on one host) and Gloo's TCP.
TEST_F(CollectiveTest, SumsEqualReferenceOneTwoFourRanks) {
  for (const char* transport : {"shm", "gloo"}) {
    for (int ranks : {1, 2, 4}) {
      SCOPED_TRACE(absl::StrCat(transport, " ranks=", ranks));
      StartRanks(ranks, absl::StrCat("sums-", transport, ranks),
                 {"--mode=sums", absl::StrCat("--sizes=", kSizes),
                  absl::StrCat("--transport=", transport)});
      for (const std::string& out : ExpectAllSucceed(absl::Seconds(240))) {
        EXPECT_EQ(out, "ok\n");
      }
    }
  }
}

// The non-default Gloo algorithms, at a rank count that is not a power of two.
TEST_F(CollectiveTest, ThreeRanksOtherAlgorithms) {
  for (const char* algorithm : {"ring_chunked", "gloo_allreduce"}) {
    SCOPED_TRACE(algorithm);
    StartRanks(3, absl::StrCat("three-", algorithm),
               {"--mode=sums", "--sizes=1,7,4097,262147",
                absl::StrCat("--algorithm=", algorithm)});
    for (const std::string& out : ExpectAllSucceed(absl::Seconds(120))) {
      EXPECT_EQ(out, "ok\n");
    }
  }
}

// DenseAllReducer: averages right and both ranks end bitwise identical, on
// either CPU transport.
TEST_F(CollectiveTest, DenseAllReducerRanksBitwiseIdentical) {
  for (const char* transport : {"shm", "gloo"}) {
    SCOPED_TRACE(transport);
    StartRanks(2, absl::StrCat("dense-", transport),
               {"--mode=dense", absl::StrCat("--transport=", transport)});
    std::vector<std::string> outs = ExpectAllSucceed(absl::Seconds(120));
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_TRUE(absl::StartsWith(outs[0], "hash ")) << outs[0];
    EXPECT_TRUE(absl::StrContains(outs[0], "buckets 3")) << outs[0];
    EXPECT_EQ(outs[0], outs[1]);
  }
}

class CollectiveFailureTest : public CollectiveTest {
 protected:
  // Returns the "error CODE MS" line of every rank but rank 1.
  std::vector<std::string> SignalRankOne(
      int n, int sig, const std::string& name,
      const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"--mode=loop", "--count=4194304"};
    args.insert(args.end(), extra.begin(), extra.end());
    StartRanks(n, name, args);
    for (Child& c : children_) {
      auto line = ReadLine(c.stdout_fd, absl::Seconds(60));
      EXPECT_TRUE(line.ok()) << line.status();
      if (line.ok()) {
        EXPECT_EQ(*line, "ready");
      }
    }
    EXPECT_EQ(kill(children_[1].pid, sig), 0);
    std::vector<std::string> lines;
    for (int r = 0; r < n; ++r) {
      if (r == 1) continue;
      auto line = ReadLine(children_[r].stdout_fd, absl::Seconds(60));
      EXPECT_TRUE(line.ok()) << "rank " << r << ": " << line.status();
      lines.push_back(line.ok() ? *line : "");
      auto code = WaitExit(children_[r].pid, absl::Now() + absl::Seconds(60));
      EXPECT_TRUE(code.ok()) << "rank " << r << ": " << code.status();
      if (code.ok()) {
        EXPECT_EQ(*code, 3) << "rank " << r;
      }
    }
    return lines;
  }

  // Checks "error CODE MS" with CODE one of `codes` and MS within `limit_ms`.
  static void ExpectError(const std::string& line,
                          const std::vector<std::string>& codes,
                          int64_t limit_ms) {
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    ASSERT_EQ(parts.size(), 3u) << line;
    EXPECT_EQ(parts[0], "error");
    EXPECT_NE(std::find(codes.begin(), codes.end(), parts[1]), codes.end())
        << line;
    int64_t ms = 0;
    ASSERT_TRUE(absl::SimpleAtoi(parts[2], &ms)) << line;
    EXPECT_LE(ms, limit_ms) << "the failing call outlived its timeout";
  }
};

// A rank SIGKILLed mid-allreduce: the others fail (its sockets close, or
// shared memory sees it gone), well within the 10 s timeout.
TEST_F(CollectiveFailureTest, KilledRankFailsOthersWithinTimeout) {
  for (const char* transport : {"shm", "gloo"}) {
    SCOPED_TRACE(transport);
    for (const std::string& line : SignalRankOne(
             3, SIGKILL, absl::StrCat("kill-", transport),
             {"--timeout_ms=10000", absl::StrCat("--transport=", transport)})) {
      ExpectError(line, {"UNAVAILABLE", "DEADLINE_EXCEEDED"}, 10000 + 2000);
    }
    TearDown();
  }
}

// A stopped (alive but silent) rank: nothing closes, so only the per-call
// timeout (1.5 s; Gloo's transport bound is 6 s) can end the wait. Gloo
// ranks then exit within the 6 s, once their abandoned transfer gives up.
TEST_F(CollectiveFailureTest, StuckRankTimesOutOthers) {
  for (const char* transport : {"shm", "gloo"}) {
    SCOPED_TRACE(transport);
    for (const std::string& line :
         SignalRankOne(3, SIGSTOP, absl::StrCat("stop-", transport),
                       {"--timeout_ms=6000", "--call_timeout_ms=1500",
                        absl::StrCat("--transport=", transport)})) {
      // UNAVAILABLE when a rank that timed out already exited.
      ExpectError(line, {"DEADLINE_EXCEEDED", "UNAVAILABLE"}, 1500 + 2000);
    }
    TearDown();
  }
}

}  // namespace
}  // namespace testing
}  // namespace sampan
