#!/usr/bin/env bash
# Half-load p99 of `sampan serve` builds compared on quiet cores: ROUNDS
# rounds, each running bench/serving_bench once per build in turn (DeepFM
# 3x400, 100-example requests, ROWS rows in memory), every run started only
# once the host's cores have been >= 90% idle for 3 s (other sessions' work
# makes p99 meaningless), waiting up to 30 minutes for that.
# Usage: bench/serving_p99_ab.sh SAMPAN_BINARY... ; ROWS (1000000), ROUNDS
# (3), DIR. Prints each run's rpc, limit and half rows, then per build the
# half-load p99s and their median.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 SAMPAN_BINARY..." >&2; exit 2; }
ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-3}
DIR=${DIR:-/tmp/sampan-serving-bench}
bazel build --disk_cache=/tmp/bazel-disk //bench:serving_bench
bench=$(mktemp /tmp/serving_bench.XXXXXX)
cp bazel-bin/bench/serving_bench "$bench"  # builds meanwhile do not change it
chmod +x "$bench"
trap 'rm -f "$bench"' EXIT
idle_pct() {
  local a b c d e f g h t1 i1
  read -r _ a b c d e f g h _ < /proc/stat
  t1=$((a + b + c + d + e + f + g + h)); i1=$((d + e))
  sleep 3
  read -r _ a b c d e f g h _ < /proc/stat
  echo $((100 * (d + e - i1) / (a + b + c + d + e + f + g + h - t1)))
}
declare -A p99s
for round in $(seq 1 "$ROUNDS"); do
  for bin in "$@"; do
    for _ in $(seq 1 600); do [ "$(idle_pct)" -ge 90 ] && break; done
    echo "== round $round $bin (idle $(idle_pct)%)"
    out=$("$bench" --model=DEEPFM --rows="$ROWS" --sizes=100 --forms=examples \
      --reps=1 --seconds=5 --dir="$DIR" --sampan="$bin")
    echo "$out" | grep -E '^  (rpc|limit|half) '
    p99=$(echo "$out" | sed -n 's/^RESULT.* half_p99_ms=\([0-9.]*\).*/\1/p')
    p99s[$bin]="${p99s[$bin]:-} $p99"
  done
done
for bin in "$@"; do
  echo "$bin half-load p99 ms:${p99s[$bin]} median" \
    "$(echo "${p99s[$bin]}" | tr ' ' '\n' | grep . | sort -g |
      awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')"
done
