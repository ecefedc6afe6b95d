#!/usr/bin/env bash
# A table of 2 x 10^9 parameters on this machine's disk (issue 20 item 2):
# ROWS rows of dim 16 (125 M x 17 floats = 2.1 x 10^9 parameters) bulk
# loaded into a RocksDB table once, then trained by pull + push steps of
# 4,096 Zipf(0.99) keys over every row with the hot tier at BUDGET_MB, each
# rep in a fresh process (as a restarted pserver: its peak RSS is the
# serving footprint); alternated with the all-hot peer, a memory table
# holding every row, trained the same way. Prints each run's line and the
# medians: build rate, disk bytes a row, keys/s against the all-hot table's,
# cold-read share, peak RSS against the budget.
#
#   [ROWS=125000000] [BUDGET_MB=2048] [SECONDS_PER_RUN=60] [REPS=3]
#   [DIR=/tmp/large_table_bench] [MEMORY_PEER=1] bench/large_table_bench.sh
#
# Needs ~16 GB of disk in DIR and, for the all-hot peer, ~15 GB of RAM (set
# MEMORY_PEER=0 without it). Run time at the defaults on 2 cores: about 2
# minutes to build, then REPS x (1 + 3.5) minutes (the peer loads its rows
# in memory every rep): ~16 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-125000000}; BUDGET_MB=${BUDGET_MB:-2048}
SECS=${SECONDS_PER_RUN:-60}; REPS=${REPS:-3}
DIR=${DIR:-/tmp/large_table_bench}; MEMORY_PEER=${MEMORY_PEER:-1}
BIN=${BIN:-bazel-bin/bench/large_table_bench}
OUT=$(mktemp /tmp/large_table_bench.XXXXXX)
trap 'rm -rf "$DIR" "$OUT"' EXIT
field() { sed -n "s/.*[ ^]$1=\([0-9.e+-]*\).*/\1/p"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

"$BIN" --case=rocksdb --phase=build --rows="$ROWS" --dir="$DIR" | tee -a "$OUT"
for rep in $(seq "$REPS"); do
  "$BIN" --case=rocksdb --phase=train --rows="$ROWS" --dir="$DIR" \
    --budget_mb="$BUDGET_MB" --seconds="$SECS" 2>/dev/null | tee -a "$OUT"
  if [ "$MEMORY_PEER" = 1 ]; then
    "$BIN" --case=memory --rows="$ROWS" --seconds="$SECS" 2>/dev/null | tee -a "$OUT"
  fi
done
rocks=$(grep "phase=train" "$OUT")
echo "--- $ROWS rows x dim 16, medians of $REPS"
echo "build: $(grep phase=build "$OUT" | field build_rows_per_s) rows/s, $(grep phase=build "$OUT" | field disk_bytes_per_row) disk bytes a row"
k=$(echo "$rocks" | field keys_per_s | median)
echo "RocksDB, hot tier $BUDGET_MB MB: $k keys/s, cold share $(echo "$rocks" | field cold_share | median), table peak RSS $(echo "$rocks" | field table_peak_rss_mb | median) MB (within 1.25x: $(echo "$rocks" | field rss_within_budget | tr '\n' ' '))"
if [ "$MEMORY_PEER" = 1 ]; then
  m=$(grep "case=memory" "$OUT" | field keys_per_s | median)
  echo "all-hot memory table: $m keys/s, peak RSS $(grep case=memory "$OUT" | field peak_rss_mb | median) MB; ratio $(echo "scale=3; $k / $m" | bc)"
fi
