// The peer for collective_bench: OpenMPI's MPI_Allreduce over the same sizes,
// iteration counts and busbw formula. Run under mpirun, e.g.
//   mpirun -np 2 --mca pml ob1 --mca btl tcp,self collective_bench_mpi
// Rank 0 prints: name bytes ranks latency_us busbw_GBps (median of --reps).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* name = "mpi";
  size_t max_bytes = 64u << 20;
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "--name=", 7) == 0) name = argv[i] + 7;
    if (strncmp(argv[i], "--max_bytes=", 12) == 0)
      max_bytes = strtoull(argv[i] + 12, nullptr, 10);
    if (strncmp(argv[i], "--reps=", 7) == 0) reps = atoi(argv[i] + 7);
  }
  std::vector<size_t> sizes;
  for (size_t b = 4096; b <= max_bytes; b *= 4) sizes.push_back(b);
  std::vector<float> data(max_bytes / sizeof(float), 1.0f);
  std::vector<std::vector<double>> us(sizes.size());
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t s = 0; s < sizes.size(); ++s) {
      const int count = static_cast<int>(sizes[s] / sizeof(float));
      const int iters = static_cast<int>(
          std::clamp<size_t>((256u << 20) / sizes[s], 3, 2000));
      for (int i = 0; i < 2; ++i) {
        MPI_Allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      }
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      for (int i = 0; i < iters; ++i) {
        MPI_Allreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
      }
      us[s].push_back((MPI_Wtime() - start) / iters * 1e6);
    }
  }
  if (rank == 0) {
    for (size_t s = 0; s < sizes.size(); ++s) {
      std::sort(us[s].begin(), us[s].end());
      const double med = us[s][us[s].size() / 2];
      const double busbw =
          2.0 * (size - 1) / size * sizes[s] / (med * 1e-6) / 1e9;
      std::printf("%-24s %10zu %5d %12.1f %11.3f\n", name, sizes[s], size, med,
                  busbw);
    }
  }
  MPI_Finalize();
  return 0;
}
