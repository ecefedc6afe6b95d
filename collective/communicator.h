// collective: allreduce, broadcast and barrier among the trainers of a job.
//
// A Communicator joins `size` ranks that find each other through the
// coordinator's key-value store (no shared filesystem). Every rank must make
// the same collective calls in the same order with the same counts; the
// results are then bitwise identical on every rank (each element is reduced
// once, by one rank, and copied to the others).
//
// Failure: every call has a timeout. A dead or stuck peer turns into
// DEADLINE_EXCEEDED or UNAVAILABLE within that timeout, never a hang. After a
// failed collective the communicator is broken (peers may be mid-message) and
// every later call returns the same error; make a new one with a new `name`.
// A call that timed out may leave a transfer into its buffer running: keep
// the buffer alive until the communicator is destroyed (which waits at most
// options.timeout for it).
//
// Thread safety: calls on one communicator must not overlap (collectives are
// ordered). Different communicators are independent.
//
// Backends: on CPU, shared memory among ranks of one host ("shm") or Gloo
// over TCP ("gloo"), data in host memory; NCCL on
// GPU ("nccl", data in device memory of the current CUDA device). NCCL is
// compiled in wherever the CUDA toolkit is, and reports UNAVAILABLE at run
// time on a machine without a GPU.
//
// Process-wide effect: the Gloo backend sets SIGPIPE to SIG_IGN (when it is
// at its default) so that a dead peer fails a call rather than this process.
#ifndef SAMPAN_COLLECTIVE_COMMUNICATOR_H_
#define SAMPAN_COLLECTIVE_COMMUNICATOR_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"

namespace sampan {
namespace collective {

enum class ReduceOp {
  kSum,
  // Sum divided by size(); for size a power of two the division is exact.
  kAverage,
};

enum class Backend {
  kAuto,  // NCCL when a GPU is usable, else Gloo.
  kGloo,
  kNccl,
};

// How the Gloo backend allreduces. Measured by bench/collective_bench (see
// bench/RESULTS.md): halving-doubling is the fastest of the three from 4 KiB
// to 16 MiB except gloo::allreduce() at >= 4 MiB, which is 3-4x slower at
// small sizes and known to stall after small calls on the same context.
enum class GlooAlgorithm {
  kRingChunked,      // gloo::AllreduceRingChunked
  kHalvingDoubling,  // gloo::AllreduceHalvingDoubling
  kGlooAllreduce,    // the newer gloo::allreduce() (slow after small calls)
};

struct CommunicatorOptions {
  // host:port of the coordinator whose key-value store does the rendezvous.
  std::string coordinator_address;
  // Names this communicator in the key-value store. Every rank uses the same
  // name; a new communicator in the same job needs a new name.
  std::string name = "dense";
  // This process's rank in [0, size) and the number of ranks.
  int rank = 0;
  int size = 1;
  Backend backend = Backend::kAuto;
  // Bounds the rendezvous (all ranks must arrive within it) and is the upper
  // bound of any call's own timeout for the Gloo transport.
  absl::Duration timeout = absl::Seconds(60);
  // Address the Gloo TCP transport listens on and publishes to peers.
  std::string hostname = "127.0.0.1";
  GlooAlgorithm gloo_algorithm = GlooAlgorithm::kHalvingDoubling;
  // For the CPU backend: when every rank runs on this host (same hostname,
  // boot and pid namespace), use shared memory instead of Gloo's TCP, which
  // is several times faster on loopback. False forces Gloo.
  bool shared_memory = true;
  // Channel credentials (TLS, bearer token) for the rendezvous RPCs to the
  // coordinator; null means plaintext. Gloo's TCP pairs themselves are not
  // encrypted; shared memory never leaves the host.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "shm", "gloo" or "nccl".
  virtual const char* backend() const = 0;

  // Replaces data[0, count) on every rank with the elementwise sum (or mean)
  // over all ranks. Returns OK, or an error (DEADLINE_EXCEEDED after
  // `timeout`, UNAVAILABLE when a peer is gone).
  virtual absl::Status AllReduce(float* data, size_t count, ReduceOp op,
                                 absl::Duration timeout) = 0;
  // Copies data[0, count) of rank `root` into data on every other rank.
  virtual absl::Status Broadcast(float* data, size_t count, int root,
                                 absl::Duration timeout) = 0;
  // Returns once every rank has called Barrier.
  virtual absl::Status Barrier(absl::Duration timeout) = 0;
};

// Joins the communicator described by `options`; blocks until every rank has
// joined or `options.timeout` passes. kAuto picks NCCL when NcclAvailable().
absl::StatusOr<std::unique_ptr<Communicator>> NewCommunicator(
    const CommunicatorOptions& options);

// OK when this build has NCCL and a GPU is usable; otherwise UNAVAILABLE with
// the reason (no CUDA toolkit at build time, no driver, no device).
absl::Status NcclAvailable();

}  // namespace collective
}  // namespace sampan

#endif  // SAMPAN_COLLECTIVE_COMMUNICATOR_H_
