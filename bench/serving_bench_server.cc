#include "bench/serving_bench_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "bench/serving_bench_model.h"
#include "google/protobuf/text_format.h"

extern char** environ;

namespace sampan {
namespace {

namespace fs = std::filesystem;

// Up to 10 minutes: a large model loads before it answers.
constexpr absl::Duration kStartTimeout = absl::Minutes(10);

// Starts `sampan serve dir/<name>.pbtxt args...`; waits for its port file
// and returns its pid and host:port.
pid_t Spawn(const ServeCommand& cmd, const JobConfig& config,
            const std::string& name, const std::vector<std::string>& extra,
            std::string* target) {
  const std::string job = absl::StrCat(cmd.dir, "/", name, ".pbtxt");
  const std::string port = absl::StrCat(cmd.dir, "/", name, ".port");
  const std::string log = absl::StrCat(cmd.dir, "/", name, ".log");
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  std::ofstream(job) << text;
  fs::remove(port);
  std::vector<std::string> args =
      absl::StrSplit(cmd.wrap, ' ', absl::SkipEmpty());
  for (const std::string& a :
       {cmd.sampan, std::string("serve"), job, "--port_file=" + port}) {
    args.push_back(a);
  }
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ) !=
      0) {
    std::fprintf(stderr, "cannot start %s\n", argv[0]);
    std::exit(1);
  }
  posix_spawn_file_actions_destroy(&actions);
  const absl::Time deadline = absl::Now() + kStartTimeout;
  while (!fs::exists(port) && absl::Now() < deadline &&
         waitpid(pid, nullptr, WNOHANG) == 0) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  int p = 0;
  if (!(std::ifstream(port) >> p)) {
    std::fprintf(stderr, "%s did not start; see %s\n", name.c_str(),
                 log.c_str());
    kill(pid, SIGKILL);
    std::exit(1);
  }
  *target = absl::StrCat("127.0.0.1:", p);
  return pid;
}

// Waits until `target` answers a Predict of one line.
void AwaitPredict(const Servers& servers, const std::string& name) {
  auto stub = NewStub(servers.target);
  serving::PredictRequest probe;
  probe.add_lines(LineOf(std::vector<uint64_t>(kBenchFields, 0)));
  serving::PredictResponse resp;
  std::string error;
  const absl::Time begin = absl::Now();
  while (!Call(stub.get(), probe, &resp, &error)) {
    bool exited = false;
    for (pid_t pid : servers.pids) {
      exited = exited || waitpid(pid, nullptr, WNOHANG) == pid;
    }
    if (absl::Now() > begin + kStartTimeout || exited) {
      std::fprintf(stderr,
                   "%s not answering (%s); see its logs in the bench "
                   "directory\n",
                   name.c_str(), error.c_str());
      for (pid_t pid : servers.pids) kill(pid, SIGKILL);
      std::exit(1);
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  std::printf("%s (pids %s) on %s, model loaded in %.1f s\n", name.c_str(),
              absl::StrJoin(servers.pids, ",").c_str(), servers.target.c_str(),
              absl::ToDoubleSeconds(absl::Now() - begin));
}

}  // namespace

Servers StartOneProcess(const ServeCommand& cmd, const JobConfig& config,
                        const std::string& name) {
  Servers s;
  const std::string mport = absl::StrCat(cmd.dir, "/", name, ".metrics_port");
  fs::remove(mport);
  s.pids.push_back(Spawn(cmd, config, name,
                         {"--metrics_port=0", "--metrics_port_file=" + mport},
                         &s.target));
  AwaitPredict(s, "sampan serve");
  std::ifstream(mport) >> s.metrics_port;
  return s;
}

HistogramBuckets ScrapeServerLatency(const Servers& servers) {
  HistogramBuckets buckets;
  if (servers.metrics_port <= 0) return buckets;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return buckets;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(servers.metrics_port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string body;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string get = "GET /metrics HTTP/1.0\r\nHost: bench\r\n\r\n";
    if (write(fd, get.data(), get.size()) == ssize_t(get.size())) {
      char chunk[1 << 16];
      for (ssize_t n; (n = read(fd, chunk, sizeof chunk)) > 0;) {
        body.append(chunk, size_t(n));
      }
    }
  }
  close(fd);
  const std::string prefix =
      "sampan_serving_request_duration_seconds_bucket{le=\"";
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (!absl::ConsumePrefix(&line, prefix)) continue;
    const size_t quote = line.find('"');
    const size_t space = line.rfind(' ');
    if (quote == line.npos || space == line.npos) continue;
    double le = 0, count = 0;
    const absl::string_view bound = line.substr(0, quote);
    if (bound == "+Inf") {
      le = std::numeric_limits<double>::infinity();
    } else if (!absl::SimpleAtod(bound, &le)) {
      continue;
    }
    if (!absl::SimpleAtod(line.substr(space + 1), &count)) continue;
    buckets.emplace_back(le, count);
  }
  return buckets;
}

ServerTail TailBetween(const HistogramBuckets& before,
                       const HistogramBuckets& after, double ms, double q) {
  ServerTail t;
  if (after.empty() || (!before.empty() && before.size() != after.size())) {
    return t;
  }
  std::vector<double> grew(after.size());
  for (size_t i = 0; i < after.size(); ++i) {
    grew[i] = after[i].second - (before.empty() ? 0 : before[i].second);
  }
  const double total = grew.back();  // +Inf
  if (total <= 0) return t;
  double within = 0;  // calls at most `ms`: the largest bound <= ms
  for (size_t i = 0; i < after.size(); ++i) {
    if (after[i].first * 1e3 <= ms + 1e-9) within = grew[i];
  }
  t.over = 1 - within / total;
  for (size_t i = 0; i < after.size(); ++i) {
    if (grew[i] < q * total) continue;
    const double lo = i == 0 ? 0 : after[i - 1].first;
    const double below = i == 0 ? 0 : grew[i - 1];
    const double hi = std::isinf(after[i].first) ? lo : after[i].first;
    const double in = grew[i] - below;
    t.quantile_ms =
        1e3 * (lo + (hi - lo) * (in > 0 ? (q * total - below) / in : 1));
    break;
  }
  return t;
}

Servers StartSharded(const ServeCommand& cmd, const JobConfig& config,
                     const std::string& name) {
  Servers s;
  std::vector<std::string> addresses;
  for (uint32_t i = 0; i < config.serving().shards(); ++i) {
    std::string target;
    s.pids.push_back(Spawn(cmd, config, absl::StrCat(name, "-lookup-", i),
                           {"--role=lookup", absl::StrCat("--shard=", i)},
                           &target));
    addresses.push_back(target);
  }
  s.pids.push_back(
      Spawn(cmd, config, absl::StrCat(name, "-predictor"),
            {"--role=predictor", "--shards=" + absl::StrJoin(addresses, ",")},
            &s.target));
  AwaitPredict(s, absl::StrCat(config.serving().shards(),
                               " lookup shards + a predictor"));
  return s;
}

void StopServers(const Servers& servers) {
  for (pid_t pid : servers.pids) kill(pid, SIGTERM);
  for (pid_t pid : servers.pids) {
    int status = 0;
    waitpid(pid, &status, 0);
  }
}

double ProcessCpu(pid_t pid) {
  if (pid <= 0) return 0;
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::vector<std::string> f = absl::StrSplit(stat.substr(paren + 2), ' ');
  double ut = 0, st = 0;  // fields 14 and 15 of stat, 12 and 13 after ')'
  if (f.size() < 13 || !absl::SimpleAtod(f[11], &ut) ||
      !absl::SimpleAtod(f[12], &st)) {
    return 0;
  }
  return (ut + st) / sysconf(_SC_CLK_TCK);
}

std::unique_ptr<serving::Predictor::Stub> NewStub(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // own connection
  args.SetMaxReceiveMessageSize(64 << 20);
  return serving::Predictor::NewStub(grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args));
}

bool Call(serving::Predictor::Stub* stub, const serving::PredictRequest& req,
          serving::PredictResponse* resp, std::string* error) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  grpc::Status s = stub->Predict(&ctx, req, resp);
  if (!s.ok()) *error = absl::StrCat(s.error_code(), ": ", s.error_message());
  return s.ok();
}

}  // namespace sampan
