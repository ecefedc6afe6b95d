#include "common/metrics.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace sampan {
namespace {

// Process metrics in the names every Prometheus client library uses.
class ProcessCollector : public prometheus::Collectable {
 public:
  ProcessCollector() : start_(absl::ToUnixSeconds(absl::Now())) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    return {Gauge("process_resident_memory_bytes", "Resident memory size.",
                  ResidentBytes()),
            Counter("process_cpu_seconds_total",
                    "User and system CPU time spent.", CpuSeconds()),
            Gauge("process_start_time_seconds",
                  "Start time of the process since the Unix epoch.", start_)};
  }

 private:
  static prometheus::MetricFamily Gauge(const char* name, const char* help,
                                        double value) {
    prometheus::MetricFamily f{name, help, prometheus::MetricType::Gauge, {}};
    f.metric.emplace_back();
    f.metric.back().gauge.value = value;
    return f;
  }

  static prometheus::MetricFamily Counter(const char* name, const char* help,
                                          double value) {
    prometheus::MetricFamily f{name, help, prometheus::MetricType::Counter, {}};
    f.metric.emplace_back();
    f.metric.back().counter.value = value;
    return f;
  }

  static double ResidentBytes() {
    std::ifstream statm("/proc/self/statm");
    long pages_total = 0, pages_resident = 0;
    statm >> pages_total >> pages_resident;
    return static_cast<double>(pages_resident) * sysconf(_SC_PAGESIZE);
  }

  static double CpuSeconds() {
    std::ifstream stat("/proc/self/stat");
    std::string line;
    std::getline(stat, line);
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields of the whole line.
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
      if (i == 14) utime = std::stol(field);
      if (i == 15) stime = std::stol(field);
    }
    return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
  }

  const double start_;
};

}  // namespace

// The exposer holds collectables by weak_ptr, so the registry is owned by a
// shared_ptr that lives until exit.
const std::shared_ptr<prometheus::Registry>& SharedRegistry() {
  static auto* registry = new std::shared_ptr<prometheus::Registry>(
      std::make_shared<prometheus::Registry>());
  return *registry;
}

prometheus::Registry& MetricsRegistry() { return *SharedRegistry(); }

const std::vector<double>& LatencyBuckets() {
  static const auto* buckets = new std::vector<double>{
      5e-5,   1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
      2.5e-2, 5e-2, 0.1,    0.25, 0.5,  1,      2.5,  10};
  return *buckets;
}

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& host, int port) {
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(
        absl::StrCat(host, ":", port), /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(
        "metrics: cannot listen on ", host, ":", port, ": ", e.what()));
  }
  const std::vector<int> ports = exposer->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(
        absl::StrCat("metrics: no listening port on ", host, ":", port));
  }
  return std::unique_ptr<MetricsServer>(
      new MetricsServer(std::move(exposer), ports[0]));
}

MetricsServer::MetricsServer(std::unique_ptr<prometheus::Exposer> exposer,
                             int port)
    : exposer_(std::move(exposer)),
      process_(std::make_shared<ProcessCollector>()),
      port_(port) {
  exposer_->RegisterCollectable(SharedRegistry());
  exposer_->RegisterCollectable(process_);
}

}  // namespace sampan
