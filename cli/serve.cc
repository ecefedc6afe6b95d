#include "cli/serve.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <signal.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace sampan {
namespace {

sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

absl::Status WritePortFile(const std::string& path, int port) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp);
  out << port << "\n";
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot write port file ", path));
  }
  return absl::OkStatus();
}

// Returns the signal received, or 0 after `timeout` without one.
int WaitForSignal(absl::Duration timeout) {
  sigset_t set = TerminationSignals();
  timespec ts = absl::ToTimespec(timeout);
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

}  // namespace

void BlockTerminationSignals() {
  sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

absl::Status ServeUntilSignal(grpc::Service* service,
                              const ServeOptions& options) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(absl::StrCat(options.host, ":", options.port),
                           options.credentials
                               ? options.credentials
                               : grpc::InsecureServerCredentials(),
                           &port);
  builder.SetMaxReceiveMessageSize(256 << 20);
  builder.SetMaxSendMessageSize(256 << 20);
  if (options.max_idle_threads > 0) {
    builder.SetSyncServerOption(grpc::ServerBuilder::MAX_POLLERS,
                                options.max_idle_threads);
  }
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.host, ":", options.port));
  }
  const std::string address = absl::StrCat(
      options.advertise.empty() ? options.host : options.advertise, ":", port);
  SAMPAN_LOG(INFO) << "serving on " << options.host << ":" << port
                   << (options.advertise.empty() ? "" : " as " + address);
  absl::Status status;
  if (!options.port_file.empty()) {
    status = WritePortFile(options.port_file, port);
  }
  if (status.ok() && options.on_started) status = options.on_started(address);
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  bool serving = options.ready == nullptr;
  if (!serving && health != nullptr) health->SetServingStatus(false);
  if (!options.ready_file.empty()) std::remove(options.ready_file.c_str());
  bool ready_file_written = false;
  while (status.ok()) {
    if (!serving && options.ready() && health != nullptr) {
      health->SetServingStatus(true);
      serving = true;
    }
    if (serving && !ready_file_written && !options.ready_file.empty()) {
      ready_file_written = true;
      std::ofstream(options.ready_file).close();
      SAMPAN_LOG(INFO) << "ready: wrote " << options.ready_file;
    }
    const int sig = WaitForSignal(options.tick);
    if (sig != 0) {
      SAMPAN_LOG(INFO) << "signal " << sig << ": shutting down";
      break;
    }
    if (options.on_tick) options.on_tick();
  }
  if (!options.ready_file.empty()) std::remove(options.ready_file.c_str());
  server->Shutdown(absl::ToChronoTime(absl::Now() + options.grace));
  server->Wait();
  return status;
}

}  // namespace sampan
