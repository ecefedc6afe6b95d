// Running a gRPC service as a long-lived process: bind, report the port,
// serve until SIGTERM or SIGINT, then shut down with a grace period.
#ifndef SAMPAN_CLI_SERVE_H_
#define SAMPAN_CLI_SERVE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace grpc {
class Service;
class ServerCredentials;
}  // namespace grpc

namespace sampan {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 picks a free port
  // When set, the bound port is written here (atomically, by rename) once the
  // server accepts calls, so a launcher can wait for it.
  std::string port_file;
  // The name others reach this server by, in the address on_started gets
  // (and the name its TLS certificate must carry); empty = host. On
  // Kubernetes a pod binds its IP but is known by a stable DNS name.
  std::string advertise;
  // Called once serving with "advertise:port" ("host:port" without
  // advertise); may start background work.
  std::function<absl::Status(const std::string& address)> on_started;
  // When set, the health service answers NOT_SERVING until it returns true
  // (checked at start and every tick); SERVING from the start otherwise.
  std::function<bool()> ready;
  // When set, removed at start, created (empty) once `ready` first returns
  // true (at start without `ready`) and removed at shutdown: what an exec
  // readiness probe (`test -e`) checks, with or without TLS (the kubelet's
  // gRPC probe speaks plaintext only).
  std::string ready_file;
  // Called about every `tick` while serving (heartbeats).
  std::function<void()> on_tick;
  absl::Duration tick = absl::Seconds(1);
  // In-flight calls get this long to finish at shutdown.
  absl::Duration grace = absl::Seconds(5);
  // Server credentials (TLS, token check); null means plaintext.
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // gRPC's synchronous server: how many idle threads it keeps waiting for
  // calls; 0 keeps gRPC's default (2). With more concurrent calls than that,
  // every call that ends beyond it ends its thread and the next call starts
  // one (and its thread_local scratch anew); `sampan serve` raises it.
  int max_idle_threads = 0;
};

// Blocks SIGTERM and SIGINT in the calling thread and every thread it creates
// afterwards, so that ServeUntilSignal can wait for them. Call first in main.
void BlockTerminationSignals();

// Serves `service` until a termination signal arrives or on_started fails.
absl::Status ServeUntilSignal(grpc::Service* service,
                              const ServeOptions& options);

}  // namespace sampan

#endif  // SAMPAN_CLI_SERVE_H_
