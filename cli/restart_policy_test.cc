#include "cli/restart_policy.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/launcher.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

// waitpid statuses as the kernel writes them.
constexpr int kExit1 = 1 << 8;
constexpr int kDataError = kTrainerDataErrorExit << 8;
constexpr int kKilled = SIGKILL;

class RestartPolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/restart_policy_", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    config_.set_output_dir(dir_);
    config_.mutable_cluster()->set_max_restarts(2);
    config_.mutable_cluster()->set_num_trainers(2);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Child& Add(const std::string& name, bool trainer, int restarts_left) {
    Child c;
    c.name = name;
    c.is_trainer = trainer;
    c.restarts_left = restarts_left;
    c.exited = true;
    c.args = {name, "--port=1234", "--checkpoint=old"};
    children_.push_back(c);
    return children_.back();
  }

  // A server child that exited with `status`, its port file holding `port`
  // (0: none reported yet).
  Child& AddServer(const std::string& name, int restarts_left, int status,
                   int port) {
    Child& c = Add(name, false, restarts_left);
    c.port_file = absl::StrCat(dir_, "/", name, ".port");
    if (port != 0) std::ofstream(c.port_file) << port;
    c.status = status;
    return c;
  }

  RestartPolicy Policy() {
    return RestartPolicy(config_, &outages_, [this](Child& c) {
      relaunched_.push_back(
          absl::StrCat(c.name, " ", absl::StrJoin(c.args, " ")));
    });
  }

  std::string dir_;
  JobConfig config_;
  CoordinatorOutages outages_;
  std::deque<Child> children_;
  std::vector<std::string> relaunched_;
};

TEST_F(RestartPolicyTest, PserverComesBackOnANewPortWhileRestartsLast) {
  RestartPolicy policy = Policy();
  Child& p = AddServer("pserver-0", 1, kKilled, 1234);
  ASSERT_TRUE(policy.Restart(p, children_));
  ASSERT_EQ(relaunched_.size(), 1u);
  EXPECT_NE(relaunched_[0].find("--port=0"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(p.port_file));  // it reports anew
  EXPECT_EQ(p.restarts_left, 0);
  EXPECT_EQ(policy.counts().pservers, 1);
  EXPECT_FALSE(policy.Restart(p, children_));  // none left
  EXPECT_EQ(relaunched_.size(), 1u);
}

TEST_F(RestartPolicyTest, CoordinatorAndServingKeepTheirPorts) {
  RestartPolicy policy = Policy();
  Child& coordinator = AddServer("coordinator", 2, kExit1, 4321);
  ASSERT_TRUE(policy.Restart(coordinator, children_));
  EXPECT_NE(relaunched_.back().find("--port=4321"), std::string::npos);
  EXPECT_EQ(policy.counts().coordinator, 1);
  EXPECT_TRUE(outages_.out());  // the outage runs from its death

  // Serving without a port reported yet: nothing to come back on.
  Child& serve = AddServer("serve", 2, kKilled, 0);
  EXPECT_FALSE(policy.Restart(serve, children_));
  std::ofstream(serve.port_file) << 5555;
  ASSERT_TRUE(policy.Restart(serve, children_));
  EXPECT_NE(relaunched_.back().find("--port=5555"), std::string::npos);
  EXPECT_EQ(policy.counts().serve, 1);
}

TEST_F(RestartPolicyTest, TrainerRestartsFromItsCheckpointOnlyAfterACrash) {
  RestartPolicy policy = Policy();
  Child& t = Add("trainer-0", true, 2);
  t.status = kExit1;  // an error it would meet again
  EXPECT_FALSE(policy.Restart(t, children_));
  t.status = kDataError;
  EXPECT_FALSE(policy.Restart(t, children_));
  EXPECT_TRUE(relaunched_.empty());
  t.status = kKilled;
  ASSERT_TRUE(policy.Restart(t, children_));
  ASSERT_EQ(relaunched_.size(), 1u);
  // No checkpoint yet: from the start of its input (no --checkpoint).
  EXPECT_EQ(relaunched_[0].find("--checkpoint"), std::string::npos);
  EXPECT_EQ(t.restarts_left, 1);
  EXPECT_EQ(policy.counts().trainers, 1);
}

TEST_F(RestartPolicyTest, HybridTrainersRestartTogetherAsANewGeneration) {
  config_.mutable_model()->set_type(DEEPFM);
  RestartPolicy policy = Policy();
  Child& dead = Add("trainer-0", true, 2);
  dead.status = kExit1;  // hybrid peers fail with errors, not signals
  Child& alive = Add("trainer-1", true, 2);
  alive.exited = false;
  const pid_t test = getpid();
  alive.pid = fork();  // a live rank the regroup must stop
  ASSERT_GE(alive.pid, 0);
  if (alive.pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlives a failed test
    if (getppid() != test) _exit(0);   // the test died before prctl
    pause();
    _exit(0);
  }
  Add("pserver-0", false, 2);
  ASSERT_TRUE(policy.Restart(dead, children_));
  EXPECT_TRUE(alive.exited);
  EXPECT_TRUE(WIFSIGNALED(alive.status));
  ASSERT_EQ(relaunched_.size(), 2u);  // both trainers, not the pserver
  for (const std::string& r : relaunched_) {
    EXPECT_EQ(r.rfind("trainer-", 0), 0u) << r;
    EXPECT_NE(r.find("--generation=1"), std::string::npos) << r;
  }
  // cluster.max_restarts regroups in all, shared by the ranks.
  dead.status = kExit1;
  ASSERT_TRUE(policy.Restart(dead, children_));
  EXPECT_NE(relaunched_.back().find("--generation=2"), std::string::npos);
  EXPECT_FALSE(policy.Restart(dead, children_));
  // A data error stops even a hybrid job.
  RestartPolicy fresh = Policy();
  dead.status = kDataError;
  EXPECT_FALSE(fresh.Restart(dead, children_));
}

}  // namespace
}  // namespace sampan
