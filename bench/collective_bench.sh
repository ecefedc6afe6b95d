#!/usr/bin/env bash
# Allreduce on loopback: Sampan's CPU backends (shared memory, Gloo's three
# algorithms, interleaved per size inside collective_bench) and OpenMPI's
# MPI_Allreduce over TCP and over shared memory (vader), at N = 2 and 4.
# Each tool reports the median of REPS sweeps. Build first:
#   bazel build //bench:collective_bench //bench:collective_bench_mpi
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-3}
MAX_BYTES=${MAX_BYTES:-67108864}
BIN=bazel-bin/bench
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
for n in ${RANKS:-2 4}; do
  echo "== N=$n"
  "$BIN/collective_bench" --ranks="$n" --reps="$REPS" --max_bytes="$MAX_BYTES"
  "${MPIRUN[@]}" -np "$n" --mca pml ob1 --mca btl tcp,self \
    "$BIN/collective_bench_mpi" --name=mpi_tcp --reps="$REPS" --max_bytes="$MAX_BYTES"
  "${MPIRUN[@]}" -np "$n" --mca pml ob1 --mca btl vader,self \
    "$BIN/collective_bench_mpi" --name=mpi_vader_shm --reps="$REPS" --max_bytes="$MAX_BYTES"
done
