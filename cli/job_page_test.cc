#include "cli/job_page.h"

#include <atomic>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

// A job of 2 pservers and 2 trainers, `seconds` in, each trainer at 1,000
// examples/s and half way through its input at 100 s.
coord::JobStatusResponse Snapshot(double seconds) {
  coord::JobStatusResponse s;
  s.set_elapsed_seconds(seconds);
  s.set_coordinator_incarnations(1);
  s.set_coordinator_epoch(7);
  coord::ClusterSpec* spec = s.mutable_spec();
  spec->set_num_pservers(2);
  spec->set_num_trainers(2);
  spec->set_complete(true);
  for (int i = 0; i < 2; ++i) {
    coord::Member* p = spec->add_pservers();
    p->set_role(coord::PSERVER);
    p->set_index(i);
    p->set_address(absl::StrCat("127.0.0.1:500", i));
    p->set_incarnation(1);
    p->set_alive(true);
    p->set_heartbeat_age_seconds(0.3);
    coord::PserverLoad* load = s.add_pserver_loads();
    load->set_index(i);
    load->set_rows(1000 + 10 * static_cast<uint64_t>(seconds));
    load->set_keys_pulled(static_cast<uint64_t>(39000 * seconds));
    load->set_keys_pushed(static_cast<uint64_t>(39000 * seconds));
    load->set_resident_memory_bytes(300 << 20);
    coord::Member* t = spec->add_trainers();
    *t = *p;
    t->set_role(coord::TRAINER);
    t->set_address("");
    coord::TrainerProgress* progress = s.add_trainers();
    progress->set_examples(static_cast<uint64_t>(1000 * seconds));
    progress->set_loss_sum(0.45 * progress->examples());
    progress->set_train_auc(0.78);
    progress->set_fraction_done(seconds / 200);
    progress->set_resident_memory_bytes(uint64_t{2} << 30);
  }
  return s;
}

// The first `points="..."` of the chart titled `title`, as points.
int ChartPoints(const std::string& html, const std::string& title) {
  const size_t at = html.find(absl::StrCat("<title>", title, "</title>"));
  if (at == std::string::npos) return -1;
  std::smatch m;
  const std::string rest = html.substr(at);
  if (!std::regex_search(rest, m, std::regex("points=\"([^\"]*)\""))) {
    return -1;
  }
  const std::vector<std::string> points =
      absl::StrSplit(m[1].str(), ' ', absl::SkipEmpty());
  return static_cast<int>(points.size());
}

int CountOf(const std::string& html, const std::string& s) {
  int n = 0;
  for (size_t at = html.find(s); at != std::string::npos;
       at = html.find(s, at + 1)) {
    ++n;
  }
  return n;
}

TEST(JobPageTest, ShowsProgressChartsAndTheFleet) {
  JobPage page({.job_name = "ctr"});
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  for (int s = 0; s <= 100; ++s) {
    page.Update(Snapshot(s), t0 + absl::Seconds(s));
  }
  const std::string body = page.Body();
  EXPECT_NE(body.find("id=\"state\" data-value=\"RUNNING\""), std::string::npos)
      << body;
  EXPECT_NE(body.find("id=\"examples\" data-value=\"200000\""),
            std::string::npos);
  EXPECT_NE(body.find("200,000"), std::string::npos);
  // Two trainers at 1,000 examples/s each.
  EXPECT_NE(body.find("id=\"examples-per-second\" data-value=\"2000\""),
            std::string::npos);
  EXPECT_NE(body.find("id=\"loss\" data-value=\"0.4500\""), std::string::npos);
  // Half done after 100 s: 1:40 to go.
  EXPECT_NE(body.find("50.0% done, ETA 1:40"), std::string::npos);
  EXPECT_EQ(ChartPoints(body, "Throughput"), 100);
  EXPECT_EQ(ChartPoints(body, "Train AUC"), 100);
  // Every member, alive, with its rates, rows and memory.
  EXPECT_EQ(CountOf(body, "data-role=\"pserver\""), 2);
  EXPECT_EQ(CountOf(body, "data-role=\"trainer\""), 2);
  EXPECT_EQ(CountOf(body, "data-alive=\"1\""), 4);
  EXPECT_NE(body.find("<td>78,000</td>"), std::string::npos);  // keys/s
  EXPECT_NE(body.find("<td>1,000</td>"), std::string::npos);   // examples/s
  EXPECT_NE(body.find("<td>2,000</td>"), std::string::npos);   // rows
  EXPECT_NE(body.find("300 MiB"), std::string::npos);
  EXPECT_NE(body.find("2.0 GiB"), std::string::npos);
  EXPECT_NE(body.find("no checkpoint completed yet"), std::string::npos);
  EXPECT_NE(body.find("coordinator up"), std::string::npos);
}

TEST(JobPageTest, TheShellCarriesNoJobDataAndFetchesTheBody) {
  JobPage page({.job_name = "ctr", .refresh_seconds = 3});
  page.Update(Snapshot(10), absl::Now());
  const std::string shell = page.Shell();
  EXPECT_NE(shell.find("fetch('/job/body'"), std::string::npos);
  EXPECT_NE(shell.find("setTimeout(refresh, 3000)"), std::string::npos)
      << shell;
  EXPECT_NE(shell.find("Authorization"), std::string::npos);
  EXPECT_EQ(shell.find("data-role"), std::string::npos);
  EXPECT_EQ(shell.find("127.0.0.1:5000"), std::string::npos);
  // The frozen page is the body with no script.
  const std::string frozen = page.Frozen();
  EXPECT_EQ(frozen.find("<script"), std::string::npos);
  EXPECT_NE(frozen.find(page.Body()), std::string::npos);
}

TEST(JobPageTest, RestartsLostMembersAndCheckpointsAreEvents) {
  JobPage page({.job_name = "ctr"});
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  page.Update(Snapshot(1), t0);
  coord::JobStatusResponse s = Snapshot(2);
  s.mutable_spec()->mutable_pservers(1)->set_alive(false);
  s.mutable_spec()->mutable_pservers(1)->set_heartbeat_age_seconds(6);
  page.Update(s, t0 + absl::Seconds(1));
  std::string body = page.Body();
  EXPECT_NE(body.find("pserver 1 stopped heartbeating (last 6.0 s ago)"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("data-index=\"1\" data-alive=\"0\""), std::string::npos);

  s = Snapshot(3);
  s.mutable_spec()->mutable_pservers(1)->set_incarnation(2);
  s.mutable_checkpoints()->set_completed(1);
  s.mutable_checkpoints()->set_last_epoch(4);
  s.mutable_checkpoints()->set_last_seconds(1.5);
  s.mutable_checkpoints()->set_last_completed_unix_seconds(1700000001);
  s.mutable_checkpoints()->set_abandoned(1);
  s.mutable_checkpoints()->set_last_abandoned_reason(
      "checkpoint 3: trainer 1 did not arrive");
  page.Update(s, t0 + absl::Seconds(2));
  body = page.Body();
  EXPECT_NE(body.find("pserver 1 restarted (incarnation 2) at 127.0.0.1:5001"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("data-restarts=\"1\""), std::string::npos);
  EXPECT_NE(body.find("checkpoint 4 complete in 1.5 s"), std::string::npos);
  EXPECT_NE(body.find("abandoned checkpoint 3: trainer 1 did not arrive"),
            std::string::npos);
  EXPECT_NE(body.find("1 checkpoint(s) completed; the newest, 4, 0:01 ago"),
            std::string::npos);
  // Newest first.
  EXPECT_LT(body.find("restarted (incarnation 2)"),
            body.find("stopped heartbeating"));
}

TEST(JobPageTest, HistoryStaysBoundedOverALongJob) {
  JobPage page({.job_name = "ctr", .max_points = 100});
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  for (int s = 0; s <= 5000; ++s) {
    page.Update(Snapshot(s / 50.0), t0 + absl::Seconds(s));
  }
  const std::string body = page.Body();
  const int points = ChartPoints(body, "Throughput");
  EXPECT_GE(points, 50);
  EXPECT_LE(points, 101);
  // Still at the job's rate: 2 trainers x 1,000 examples per 50 s.
  EXPECT_NE(body.find("id=\"examples-per-second\" data-value=\"40\""),
            std::string::npos);
}

TEST(JobPageTest, AStreamJobShowsPassesAndVersions) {
  JobPage page({.job_name = "hourly"});
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  for (int pass = 1; pass <= 3; ++pass) {
    coord::JobStatusResponse s = Snapshot(10 * pass);
    coord::TrainerProgress* rank0 = s.mutable_trainers(0);
    rank0->set_passes_done(pass);
    rank0->set_last_pass(absl::StrCat("2026-12-01/0", pass));
    coord::PassResult* r = rank0->mutable_last_result();
    r->set_index(pass);
    r->set_name(absl::StrCat("2026-12-01/0", pass));
    r->set_rows_scored(pass > 1 ? 5000 : 0);
    r->set_auc(0.7 + 0.01 * pass);
    r->set_version(pass);
    r->set_base(pass == 1);
    r->set_freshness_seconds(20 + pass);
    page.Update(s, t0 + absl::Seconds(10 * pass));
  }
  const std::string body = page.Body();
  EXPECT_NE(body.find("id=\"passes\" data-value=\"3\""), std::string::npos)
      << body;
  EXPECT_NE(body.find("v-000003 delta"), std::string::npos);
  EXPECT_NE(body.find("v-000001 base"), std::string::npos);
  EXPECT_NE(body.find("pass 3 (2026-12-01/03) trained; published v-000003 "
                      "delta, 23.0 s after its marker"),
            std::string::npos);
  // The first pass was not scored: two points of progressive AUC.
  EXPECT_EQ(ChartPoints(body, "Progressive AUC per pass"), 2);
  EXPECT_EQ(ChartPoints(body, "Version freshness per pass"), 3);
}

// The coordinator's tick updates while the metrics server's thread renders
// (run under ThreadSanitizer by `make tsan`).
TEST(JobPageTest, UpdatesAndRendersFromTwoThreads) {
  JobPage page({.job_name = "ctr", .max_points = 50});
  const absl::Time t0 = absl::FromUnixSeconds(1700000000);
  std::atomic<bool> done{false};
  std::thread renderer([&] {
    size_t bytes = 0;
    do {
      bytes += page.Body().size() + page.Frozen().size();
    } while (!done.load());
    EXPECT_GT(bytes, 0u);
  });
  for (int s = 0; s < 400; ++s) {
    page.Update(Snapshot(s), t0 + absl::Seconds(s));
  }
  done = true;
  renderer.join();
  EXPECT_NE(page.Body().find("id=\"examples\" data-value=\"798000\""),
            std::string::npos);
}

}  // namespace
}  // namespace sampan
