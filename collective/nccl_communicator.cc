// The GPU backend: NCCL on the current CUDA device, its ncclUniqueId
// published by rank 0 through the coordinator's key-value store.
//
// NCCL's blocking calls can wait forever for a dead peer, so the communicator
// is made non-blocking (config.blocking = 0) and every wait polls
// ncclCommGetAsyncError and the stream against a deadline; on expiry the
// communicator is aborted (ncclCommAbort), which is NCCL's documented way out.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstring>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "collective/backends.h"
#include "coordinator/client.h"

namespace sampan {
namespace collective {
namespace {

absl::Status NcclError(const std::string& what, ncclResult_t r) {
  const std::string msg = absl::StrCat(what, ": ", ncclGetErrorString(r));
  if (r == ncclRemoteError || r == ncclSystemError) {
    return absl::UnavailableError(msg);
  }
  return absl::InternalError(msg);
}

absl::Status CudaError(const std::string& what, cudaError_t e) {
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(e)));
}

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(const CommunicatorOptions& options)
      : options_(options) {}

  ~NcclCommunicator() override {
    if (comm_ != nullptr) {
      // A broken communicator may have work that never finishes: abort it.
      if (broken_.ok()) {
        ncclCommDestroy(comm_);
      } else {
        ncclCommAbort(comm_);
      }
    }
    if (scratch_ != nullptr) cudaFree(scratch_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  absl::Status Connect() {
    CoordinatorClient client(options_.coordinator_address, absl::Seconds(10),
                             options_.timeout, options_.credentials);
    const std::string key =
        absl::StrCat("collective/", options_.name, "/nccl_unique_id");
    ncclUniqueId id;
    if (options_.rank == 0) {
      ncclResult_t r = ncclGetUniqueId(&id);
      if (r != ncclSuccess) return NcclError("ncclGetUniqueId", r);
      absl::Status s = client.KvPut(
          key, std::string(reinterpret_cast<const char*>(&id), sizeof(id)));
      if (!s.ok()) return s;
    } else {
      absl::StatusOr<std::string> v = client.KvGet(key, true, options_.timeout);
      if (!v.ok()) return v.status();
      if (v->size() != sizeof(id)) {
        return absl::InternalError("nccl unique id has the wrong size");
      }
      std::memcpy(&id, v->data(), sizeof(id));
    }
    cudaError_t e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    if (e != cudaSuccess) return CudaError("cudaStreamCreate", e);
    e = cudaMalloc(&scratch_, sizeof(float));
    if (e != cudaSuccess) return CudaError("cudaMalloc", e);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = ncclCommInitRankConfig(&comm_, options_.size, id,
                                            options_.rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      comm_ = nullptr;
      return NcclError("ncclCommInitRankConfig", r);
    }
    return Finish("ncclCommInitRank", absl::Now() + options_.timeout,
                  /*stream_work=*/false);
  }

  int rank() const override { return options_.rank; }
  int size() const override { return options_.size; }
  const char* backend() const override { return "nccl"; }

  absl::Status AllReduce(float* data, size_t count, ReduceOp op,
                         absl::Duration timeout) override {
    if (!broken_.ok()) return broken_;
    if (count == 0) return absl::OkStatus();
    ncclResult_t r =
        ncclAllReduce(data, data, count, ncclFloat,
                      op == ReduceOp::kSum ? ncclSum : ncclAvg, comm_, stream_);
    return Issued("ncclAllReduce", r, timeout);
  }

  absl::Status Broadcast(float* data, size_t count, int root,
                         absl::Duration timeout) override {
    if (!broken_.ok()) return broken_;
    if (root < 0 || root >= options_.size) {
      return absl::InvalidArgumentError("Broadcast: root out of range");
    }
    if (count == 0) return absl::OkStatus();
    ncclResult_t r =
        ncclBroadcast(data, data, count, ncclFloat, root, comm_, stream_);
    return Issued("ncclBroadcast", r, timeout);
  }

  absl::Status Barrier(absl::Duration timeout) override {
    if (!broken_.ok()) return broken_;
    // NCCL has no barrier: a one-element allreduce orders all ranks.
    ncclResult_t r = ncclAllReduce(scratch_, scratch_, 1, ncclFloat, ncclSum,
                                   comm_, stream_);
    return Issued("Barrier", r, timeout);
  }

 private:
  absl::Status Issued(const char* what, ncclResult_t r,
                      absl::Duration timeout) {
    if (r != ncclSuccess && r != ncclInProgress) {
      broken_ = NcclError(what, r);
      return broken_;
    }
    return Finish(what, absl::Now() + timeout, /*stream_work=*/true);
  }

  // Polls until the communicator is idle (and the stream drained), an error,
  // or `deadline`; anything but success breaks the communicator.
  absl::Status Finish(const char* what, absl::Time deadline, bool stream_work) {
    while (true) {
      ncclResult_t state;
      ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
      if (r != ncclSuccess) state = r;
      if (state != ncclSuccess && state != ncclInProgress) {
        broken_ = NcclError(what, state);
        return broken_;
      }
      if (state == ncclSuccess) {
        if (!stream_work) return absl::OkStatus();
        cudaError_t e = cudaStreamQuery(stream_);
        if (e == cudaSuccess) return absl::OkStatus();
        if (e != cudaErrorNotReady) {
          broken_ = CudaError(what, e);
          return broken_;
        }
      }
      if (absl::Now() >= deadline) {
        broken_ = absl::DeadlineExceededError(
            absl::StrCat(what, ": not finished within the timeout"));
        return broken_;
      }
      std::this_thread::yield();
    }
  }

  const CommunicatorOptions options_;
  // Used by one collective at a time (the class contract); no lock.
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  float* scratch_ = nullptr;
  absl::Status broken_;
};

}  // namespace

absl::Status NcclAvailable() {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) {
    return absl::UnavailableError(absl::StrCat(
        "nccl: no usable GPU (cudaGetDeviceCount: ", cudaGetErrorString(e),
        ", error ", static_cast<int>(e), ")"));
  }
  if (devices == 0) return absl::UnavailableError("nccl: no GPU device");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Communicator>> NewNcclCommunicator(
    const CommunicatorOptions& options) {
  absl::Status available = NcclAvailable();
  if (!available.ok()) return available;
  auto comm = std::make_unique<NcclCommunicator>(options);
  absl::Status s = comm->Connect();
  if (!s.ok()) return s;
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace collective
}  // namespace sampan
