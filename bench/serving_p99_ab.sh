#!/usr/bin/env bash
# Half-load p99 of `sampan serve` builds compared on quiet cores: ROUNDS
# rounds, each running bench/serving_bench once per build in turn (DeepFM
# 3x400, 100-example requests, ROWS rows in memory), every run started only
# once the host's cores have been >= 90% idle for 3 s (other sessions' work
# makes p99 meaningless), waiting up to 30 minutes for that; each run's
# header gives what the host took from the idle cores just before it
# (bench/host_jitter.cc). Beside each client-side p99, the server's own:
# from its request-duration histogram, interpolated within a bucket.
# Usage: bench/serving_p99_ab.sh SAMPAN_BINARY... ; ROWS (1000000), ROUNDS
# (3), DIR, HALF_RATE (requests/s of every half run; default half of each
# run's own closed loop), CLIENT_NICE (the client threads' nice value,
# default 0; -10: they preempt the server, as a client with a machine of
# its own would), OPEN_LOOPS (the half runs' generators, each in turn:
# "async" (default; every call sent at its scheduled time, bench/open_loop.h)
# and/or "threads" (blocking threads, as before 2026-12-04)). Prints each
# run's rpc, limit and half rows, then per build and generator the half-load
# p99s and their median.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SAMPAN_BINARY..." >&2; exit 2; }
ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-3}
DIR=${DIR:-/tmp/sampan-serving-bench}
bazel build --disk_cache=/tmp/bazel-disk //bench:serving_bench //bench:host_jitter
bench=$(mktemp /tmp/serving_bench.XXXXXX)
jitter=$(mktemp /tmp/host_jitter.XXXXXX)
cp bazel-bin/bench/serving_bench "$bench"  # builds meanwhile do not change it
cp bazel-bin/bench/host_jitter "$jitter"
chmod +x "$bench" "$jitter"
trap 'rm -f "$bench" "$jitter"' EXIT
idle_pct() {
  local a b c d e f g h t1 i1
  read -r _ a b c d e f g h _ < /proc/stat
  t1=$((a + b + c + d + e + f + g + h)); i1=$((d + e))
  sleep 3
  read -r _ a b c d e f g h _ < /proc/stat
  echo $((100 * (d + e - i1) / (a + b + c + d + e + f + g + h - t1)))
}
declare -A p99s sp99s
OPEN_LOOPS=${OPEN_LOOPS:-async}
runs=()
for bin in "$@"; do
  for gen in $OPEN_LOOPS; do runs+=("$bin $gen"); done
done
for round in $(seq 1 "$ROUNDS"); do
  for run in "${runs[@]}"; do
    read -r bin gen <<< "$run"
    for _ in $(seq 1 600); do [ "$(idle_pct)" -ge 90 ] && break; done
    echo "== round $round $bin $gen (idle $(idle_pct)%;" \
      "host $(nice -n -20 "$jitter" 3 | sed -n 's/^RESULT //p'))"
    out=$("$bench" --model=DEEPFM --rows="$ROWS" --sizes=100 --forms=examples \
      --reps=1 --seconds=5 --dir="$DIR" --sampan="$bin" --open_loop="$gen" \
      --half_rate="${HALF_RATE:-0}" --client_nice="${CLIENT_NICE:-0}")
    echo "$out" | grep -E '^  (rpc|limit|half) |in the server:'
    p99=$(echo "$out" | sed -n 's/^RESULT.* half_p99_ms=\([0-9.]*\).*/\1/p')
    p99s[$run]="${p99s[$run]:-} $p99"
    sp99=$(echo "$out" |
      sed -n 's/^RESULT.* half_server_p99_ms=\([-0-9.]*\).*/\1/p')
    sp99s[$run]="${sp99s[$run]:-} $sp99"
  done
done
median() {
  tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
for run in "${runs[@]}"; do
  echo "$run half-load p99 ms:${p99s[$run]} median" \
    "$(echo "${p99s[$run]}" | median)"
  echo "$run   in the server (its histogram):${sp99s[$run]} median" \
    "$(echo "${sp99s[$run]}" | median)"
done
