#include "cli/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/child_process.h"
#include "cli/coordinator_outages.h"
#include "cli/job_prepare.h"
#include "cli/job_summary.h"
#include "cli/progress.h"
#include "cli/restart_policy.h"
#include "cli/resume.h"
#include "cli/status.h"
#include "common/config.h"
#include "common/security.h"
#include "coordinator/client.h"
#include "coordinator/coordinator.h"
#include "trainer/model_version.h"

namespace sampan {
namespace {

volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

class Launcher {
 public:
  Launcher(JobConfig config, bool resume)
      : config_(std::move(config)),
        resume_(resume),
        restarts_(config_, &outages_,
                  [this](Child& c) { Launch(c, O_APPEND); }) {}

  int Run() {
    if (const int code = PrepareJob(resume_, &config_, &prepared_); code) {
      return code;
    }
    InstallSignalHandlers();
    const int code = StartAndSupervise();
    StopAll();
    if (code == 0) PrintResult();
    return code;
  }

 private:
  void InstallSignalHandlers() {
    struct sigaction sa = {};
    sa.sa_handler = OnInterrupt;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  }

  int StartAndSupervise() {
    const std::string port_file =
        absl::StrCat(config_.output_dir(), "/coordinator.port");
    std::remove(port_file.c_str());
    // One id per launch: a coordinator restarted with it resumes this
    // launch's rendezvous state (keys, released barriers), not an earlier
    // launch's in the same output_dir.
    const std::string launch_id =
        absl::StrCat(getpid(), "-", absl::ToUnixNanos(absl::Now()));
    if (!prepared_.fleet_seed.owner().empty()) {
      // The checkpoint's fleet was rescaled: the coordinator starts as it
      // (its size and owners), and the pservers beyond
      // cluster.num_pservers start once it reports them (FollowFleet).
      if (absl::Status s =
              SeedCoordinatorState(config_, launch_id, prepared_.fleet_seed);
          !s.ok()) {
        failure_ = absl::StrCat("seeding the coordinator: ", s.message());
        return ReportFailure();
      }
      std::cerr << "the checkpoint's fleet was rescaled: "
                << prepared_.fleet_seed.size() << " pservers\n";
    }
    Child& coordinator_child =
        Spawn("coordinator", false,
              {"coordinator", "--config=" + prepared_.config_path,
               "--port_file=" + port_file, "--launch_id=" + launch_id});
    coordinator_child.port_file = port_file;
    coordinator_child.restarts_left = config_.cluster().max_restarts();
    const std::string coordinator = WaitForCoordinator(port_file);
    if (coordinator.empty()) return ReportFailure();
    // Only a durable table survives a restart; a memory-backed pserver
    // that dies takes its rows with it, and the job must fail instead.
    for (uint32_t i = 0; i < config_.cluster().num_pservers(); ++i) {
      StartPserver(i, coordinator);
    }
    const bool checkpoints = TakesCheckpoints(config_);
    for (uint32_t r = 0; r < config_.cluster().num_trainers(); ++r) {
      std::vector<std::string> args = {
          "trainer", "--config=" + prepared_.config_path,
          absl::StrCat("--rank=", r), "--coordinator=" + coordinator};
      if (!prepared_.resume_from.empty())
        args.push_back("--checkpoint=" + prepared_.resume_from);
      Child& child = Spawn(absl::StrCat("trainer-", r), true, std::move(args));
      child.restarts_left = checkpoints ? config_.cluster().max_restarts() : 0;
    }
    if (config_.serving().enabled()) StartServing();
    return Supervise(coordinator);
  }

  // Only a durable table survives a restart; a memory-backed pserver that
  // dies takes its rows with it, and the job must fail instead.
  void StartPserver(uint32_t i, const std::string& coordinator) {
    const std::string name = absl::StrCat("pserver-", i);
    const std::string port_file =
        absl::StrCat(config_.output_dir(), "/", name, ".port");
    std::remove(port_file.c_str());
    Child& child =
        Spawn(name, false,
              {"pserver", "--config=" + prepared_.config_path,
               absl::StrCat("--index=", i), "--coordinator=" + coordinator,
               "--port_file=" + port_file});
    child.port_file = port_file;
    child.pserver_index = i;
    child.restarts_left = config_.table().backend() == ROCKSDB
                              ? config_.cluster().max_restarts()
                              : 0;
  }

  // The fleet's size as the coordinator has it (`sampan scale`): starts the
  // pservers it gained (the coordinator moves shards to them once they
  // register) and stops those it shed (they own nothing by then).
  void FollowFleet(const coord::JobStatusResponse& status,
                   const std::string& coordinator) {
    const uint32_t size = status.fleet().size();
    if (size == 0) return;
    std::vector<bool> running(size, false);
    for (const Child& c : children_) {
      if (c.pserver_index >= 0 && c.pserver_index < static_cast<int>(size) &&
          !c.retired) {
        running[c.pserver_index] = true;
      }
    }
    for (uint32_t i = 0; i < size; ++i) {
      if (running[i]) continue;
      std::cerr << "\nfleet: starting pserver-" << i << " (" << size
                << " pservers wanted)\n";
      StartPserver(i, coordinator);
    }
    for (Child& c : children_) {
      if (c.pserver_index < static_cast<int>(size) || c.retired || c.exited) {
        continue;
      }
      c.retired = true;
      std::cerr << "\nfleet: stopping " << c.name << " (pid " << c.pid
                << "): the fleet is " << size << " pservers and it owns no "
                << "shard\n";
      kill(c.pid, SIGTERM);
    }
  }

  // serving.enabled: `sampan serve` follows the versions the job publishes.
  // It keeps no state of its own, so a crashed one comes back on its port.
  void StartServing() {
    serve_port_file_ = absl::StrCat(config_.output_dir(), "/serve.port");
    std::remove(serve_port_file_.c_str());
    Child& child = Spawn(
        "serve", false,
        {"serve", prepared_.config_path, "--port_file=" + serve_port_file_});
    child.port_file = serve_port_file_;
    child.restarts_left = config_.cluster().max_restarts();
  }

  // Says once where the live job page is (cli/job_page.h), when the
  // coordinator serves it.
  void AnnouncePage() {
    if (page_announced_) return;
    const std::string url = JobPageUrl(config_);
    if (url.empty()) return;
    page_announced_ = true;
    std::cerr << "live job page: " << url
              << (config_.cluster().security().token_file().empty()
                      ? ""
                      : "#token=<the job's token>")
              << " (frozen into " << config_.output_dir()
              << "/job.html at the end)\n";
  }

  // Says once where predictions are served, when the server has its port.
  void AnnounceServing() {
    if (serve_port_file_.empty() || serving_announced_) return;
    std::ifstream in(serve_port_file_);
    int port = 0;
    if (!(in >> port) || port <= 0) return;
    serving_announced_ = true;
    std::cerr << "\nserving predictions on " << config_.cluster().host() << ":"
              << port << " (Predictor, proto/serving.proto) from "
              << VersionsRoot(config_) << " as versions are published; log "
              << LogDir() << "/serve.log\n";
  }

  // Every child serves /metrics on a free port and reports it in
  // <output_dir>/metrics/<name>.port, so a Prometheus (or `curl`) can find
  // the whole job (docs/config.md, "Metrics").
  Child& Spawn(const std::string& name, bool is_trainer,
               std::vector<std::string> args) {
    const std::string port_file =
        absl::StrCat(MetricsDir(), "/", name, ".port");
    std::remove(port_file.c_str());
    args.push_back("--metrics_port=0");
    args.push_back("--metrics_port_file=" + port_file);
    Child child;
    child.name = name;
    child.is_trainer = is_trainer;
    child.log_path = absl::StrCat(LogDir(), "/", name, ".log");
    child.args = std::move(args);
    children_.push_back(child);
    Launch(children_.back(), O_TRUNC);
    return children_.back();
  }

  // Forks and execs `child.args`, appending to or truncating its log.
  void Launch(Child& child, int log_mode) {
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) ExecChild(child, parent, log_mode);
    child.pid = pid;
    child.exited = false;
  }

  std::string WaitForCoordinator(const std::string& port_file) {
    const absl::Time limit =
        absl::Now() + absl::Seconds(config_.cluster().wait_timeout_seconds());
    while (absl::Now() < limit && !g_interrupted) {
      std::ifstream in(port_file);
      int port = 0;
      if (in >> port && port > 0) {
        return absl::StrCat(config_.cluster().host(), ":", port);
      }
      if (Reap()) return "";
      absl::SleepFor(absl::Milliseconds(20));
    }
    if (!g_interrupted) {
      failure_ = "coordinator did not report its port in time";
    }
    return "";
  }

  // Collects exited children; returns true if one failed (or a server
  // exited before the trainers finished).
  bool Reap() {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (Child& c : children_) {
        if (c.pid != pid) continue;
        c.exited = true;
        c.status = status;
        if (c.retired) continue;  // left the fleet, as asked
        const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (!clean && !stopping_ && restarts_.Restart(c, children_)) continue;
        if (!clean && stopping_) {
          // The job's result stands; a crash while it winds down only
          // loses what a restart would have recovered anyway.
          std::cerr << c.name << " (pid " << c.pid << ") "
                    << DescribeExit(status)
                    << " while the job was stopping; not restarted\n";
          continue;
        }
        if ((!clean || !c.is_trainer) && failed_child_ == nullptr) {
          failed_child_ = &c;
        }
      }
    }
    return failed_child_ != nullptr;
  }

  bool AllTrainersDone() const {
    for (const Child& c : children_) {
      if (c.is_trainer && !c.exited) return false;
    }
    return true;
  }

  int Supervise(const std::string& coordinator_address) {
    auto credentials = MakeChannelCredentials(SecurityOptionsFromJob(config_));
    CoordinatorClient coordinator(coordinator_address, absl::Seconds(2),
                                  absl::Seconds(2),
                                  credentials.ok() ? *credentials : nullptr);
    ProgressPrinter progress(config_);
    const absl::Duration interval =
        absl::Seconds(config_.progress_interval_seconds());
    absl::Time next_print = absl::Now() + interval;
    absl::Time next_probe = absl::InfinitePast();
    absl::Time next_fleet_check = absl::Now() + absl::Seconds(1);
    auto job_status = [&] {
      const absl::Time asked = absl::Now();
      auto status = coordinator.JobStatus();
      // An outage starts when a call was made that got no answer, not
      // when its deadline ran out.
      const absl::Duration out =
          outages_.Called(status.ok(), status.ok() ? absl::Now() : asked);
      if (out > absl::ZeroDuration()) {
        std::cerr << "\ncoordinator answering again after "
                  << absl::FormatDuration(
                         absl::Trunc(out, absl::Milliseconds(10)))
                  << "\n";
      }
      return status;
    };
    while (!g_interrupted) {
      if (Reap()) return ReportFailure();
      AnnounceServing();
      AnnouncePage();
      if (AllTrainersDone()) {
        // Their last heartbeats hold the final counts: the last line shows
        // them, not those of up to an interval before the end.
        auto status = job_status();
        if (status.ok()) progress.Update(*status);
        progress.Finish();
        return 0;
      }
      if (absl::Now() >= next_print) {
        auto status = job_status();
        if (status.ok()) {
          progress.Update(*status);
          FollowFleet(*status, coordinator_address);
        }
        next_print += interval;
      } else if (absl::Now() >= next_fleet_check) {
        // Pservers to start or stop show within a second. Through
        // job_status like every call: a call that gets no answer starts an
        // outage, whichever call it is (a fleet check that timed out
        // unrecorded once made an 8 s outage read as 5.9 s).
        auto status = job_status();
        if (status.ok()) FollowFleet(*status, coordinator_address);
        next_fleet_check = absl::Now() + absl::Seconds(1);
      } else if (outages_.out() && absl::Now() >= next_probe) {
        // How long the job waits for its coordinator, to 0.2 s: the call
        // itself records the outage; its answer is not needed here.
        (void)job_status();
        next_probe = absl::Now() + absl::Milliseconds(200);
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
    progress.Finish();
    std::cerr << "interrupted: stopping " << children_.size() << " processes\n";
    return 130;
  }

  int ReportFailure() {
    if (g_interrupted) return 130;
    if (failed_child_ == nullptr) {
      std::cerr << "error: " << failure_ << "\n";
      return 1;
    }
    const Child& c = *failed_child_;
    std::cerr << "\nerror: " << c.name << " (pid " << c.pid << ") "
              << DescribeExit(c.status) << "; stopping the job. Last lines of "
              << c.log_path << ":\n"
              << LastLines(c.log_path, 15);
    return 1;
  }

  // SIGTERM to every live child, SIGKILL to those still alive after a grace
  // period, and reap them all.
  void StopAll() {
    stopping_ = true;
    for (Child& c : children_) {
      if (!c.exited) kill(c.pid, SIGTERM);
    }
    const absl::Time limit = absl::Now() + absl::Seconds(10);
    while (absl::Now() < limit && !AllExited()) {
      Reap();
      absl::SleepFor(absl::Milliseconds(20));
    }
    for (Child& c : children_) {
      if (c.exited) continue;
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &c.status, 0);
      c.exited = true;
    }
  }

  bool AllExited() const {
    for (const Child& c : children_) {
      if (!c.exited) return false;
    }
    return true;
  }

  void PrintResult() {
    JobSummary summary;
    summary.planted_rows = prepared_.synthetic_rows;
    summary.planted_auc = prepared_.synthetic.planted_auc;
    summary.planted_logloss = prepared_.synthetic.planted_logloss;
    summary.pserver_restarts = restarts_.counts().pservers;
    summary.serve_restarts = restarts_.counts().serve;
    summary.coordinator_restarts = restarts_.counts().coordinator;
    summary.coordinator_outages = outages_.count();
    summary.coordinator_waited = outages_.total();
    summary.trainer_restarts = restarts_.counts().trainers;
    PrintJobSummary(config_, summary, std::cout);
  }

  std::string LogDir() const { return JobLogDir(config_); }
  std::string MetricsDir() const { return JobMetricsDir(config_); }

  JobConfig config_;
  const bool resume_;
  CoordinatorOutages outages_;
  RestartPolicy restarts_;      // reads config_, tells outages_
  PreparedJob prepared_;        // by PrepareJob, before any child starts
  std::deque<Child> children_;  // deque: failed_child_ points into it
  bool stopping_ = false;       // set by StopAll: exits are expected then
  Child* failed_child_ = nullptr;
  std::string failure_;
  std::string serve_port_file_;  // serving.enabled
  bool serving_announced_ = false;
  bool page_announced_ = false;
};

}  // namespace

int RunLocalJob(JobConfig config, bool resume) {
  Launcher launcher(std::move(config), resume);
  return launcher.Run();
}

}  // namespace sampan
