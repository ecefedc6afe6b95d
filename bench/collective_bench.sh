#!/usr/bin/env bash
# Allreduce on loopback, N = 2 and 4: Sampan's CPU backends (shared memory
# and Gloo's three algorithms, interleaved per size inside collective_bench)
# beside OpenMPI's MPI_Allreduce over TCP and over shared memory (vader).
# The three tools take turns REPS times (one sweep each per turn), so load
# from other jobs on the machine hits all of them alike; the table gives the
# median over the turns. Build first:
#   bazel build //bench:collective_bench //bench:collective_bench_mpi
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
MAX_BYTES=${MAX_BYTES:-67108864}
BIN=bazel-bin/bench
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1)
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for n in ${RANKS:-2 4}; do
  for ((rep = 0; rep < REPS; rep++)); do
    "$BIN/collective_bench" --ranks="$n" --reps=1 --max_bytes="$MAX_BYTES" >>"$raw"
    "${MPIRUN[@]}" -np "$n" --mca btl tcp,self "$BIN/collective_bench_mpi" \
      --name=mpi_tcp --reps=1 --max_bytes="$MAX_BYTES" >>"$raw"
    "${MPIRUN[@]}" -np "$n" --mca btl vader,self "$BIN/collective_bench_mpi" \
      --name=mpi_vader_shm --reps=1 --max_bytes="$MAX_BYTES" >>"$raw"
  done
done
python3 - "$raw" "$REPS" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 5 or not f[1].isdigit():
        continue
    key = (int(f[2]), int(f[1]), f[0])
    if key not in runs:
        order.append(key)
    runs[key].append(float(f[3]))
print(f"{'ranks':>5} {'bytes':>10} {'algorithm':<24} {'latency_us':>11} {'busbw_GBps':>11}  (median of {sys.argv[2]})")
for key in sorted(order):
    n, b, name = key
    us = statistics.median(runs[key])
    busbw = 2 * (n - 1) / n * b / (us * 1e-6) / 1e9
    print(f"{n:>5} {b:>10} {name:<24} {us:>11.1f} {busbw:>11.3f}")
PY
