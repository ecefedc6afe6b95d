// The NCCL backend for real, where a GPU is usable: one rank joins through
// the coordinator's key-value store (the ncclUniqueId published there) and
// runs AllReduce, Broadcast and Barrier on device memory. NCCL refuses two
// ranks on one GPU, so a one-GPU machine can check only N = 1; the
// multi-rank logic is shared with the CPU backends' suite. Without a GPU
// (CI) the test skips, saying why.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "collective/communicator.h"
#include "gtest/gtest.h"
#include "tests/collective_harness.h"

#ifdef SAMPAN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace sampan {
namespace testing {
namespace {

TEST(NcclSingleRankTest, AllReduceBroadcastBarrierThroughCoordinator) {
  absl::Status available = collective::NcclAvailable();
  if (!available.ok()) {
    std::printf("SKIPPED: %s\n", available.ToString().c_str());
    GTEST_SKIP() << available;
  }
#ifdef SAMPAN_HAVE_CUDA
  auto coordinator = TestCoordinator::Start();
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  collective::CommunicatorOptions o;
  o.coordinator_address = (*coordinator)->address();
  o.name = "nccl-single";
  o.rank = 0;
  o.size = 1;
  o.backend = collective::Backend::kNccl;
  o.timeout = absl::Seconds(60);
  auto comm = collective::NewCommunicator(o);
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_STREQ((*comm)->backend(), "nccl");

  // 16 Mi + 3 floats (64 MiB and a ragged tail), not zeros.
  const size_t n = (size_t(1) << 24) + 3;
  std::vector<float> host(n), back(n);
  for (size_t i = 0; i < n; ++i) host[i] = float(int(i % 1001) - 500) / 7;
  float* dev = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev), n * 4), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dev, host.data(), n * 4, cudaMemcpyHostToDevice),
            cudaSuccess);
  const absl::Duration t = absl::Seconds(30);
  for (auto op : {collective::ReduceOp::kSum, collective::ReduceOp::kAverage}) {
    absl::Status s = (*comm)->AllReduce(dev, n, op, t);
    ASSERT_TRUE(s.ok()) << s;
  }
  ASSERT_TRUE((*comm)->Broadcast(dev, n, 0, t).ok());
  ASSERT_TRUE((*comm)->Barrier(t).ok());
  EXPECT_EQ((*comm)->Broadcast(dev, n, 1, t).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(cudaMemcpy(back.data(), dev, n * 4, cudaMemcpyDeviceToHost),
            cudaSuccess);
  // One rank: the sum and the average of one contribution are itself.
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += back[i] != host[i];
  EXPECT_EQ(wrong, 0u);

  // Time it (printed for bench/RESULTS.md; pass/fail does not depend on it).
  for (size_t count : {size_t(1024), size_t(1) << 20, size_t(1) << 24}) {
    std::vector<double> us;
    for (int rep = 0; rep < 21; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      ASSERT_TRUE(
          (*comm)->AllReduce(dev, count, collective::ReduceOp::kSum, t).ok());
      us.push_back(std::chrono::duration<double, std::micro>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    }
    std::sort(us.begin(), us.end());
    // One rank moves no data: this is the call's issue-to-completion time.
    std::printf(
        "nccl single-rank allreduce %zu bytes (no transfer at N = 1): "
        "median %.1f us\n",
        count * 4, us[us.size() / 2]);
  }
  cudaFree(dev);
#endif
}

}  // namespace
}  // namespace testing
}  // namespace sampan
