#!/usr/bin/env bash
# A restarted pserver's climb back to full speed, with and without the hot
# tier's warm-up (sparse_table/hot_keys.cc: the keys the tier held are saved
# at close and their rows read back, in row-key order, after the open).
# Builds a RocksDB table of ROWS rows (dim 16) larger than the hot tier
# (BUDGET_MB), trains it WARM_SECONDS so the tier holds the Zipf-hot rows
# (its close saves their keys), then REPS times, alternated: reopens it in a
# fresh process with the saved list ("warm") or without it ("cold"), the
# page cache dropped first when this user may (a pserver on a new node, or
# after a reboot), and trains RUN_SECONDS. Prints each run's keys/s over the
# first 5 s, the first second at >= 90% of its steady rate, that rate and
# the keys of the whole run;
# then the medians. About 4 minutes with the defaults.
#   bazel build //bench:large_table_bench && bench/warm_restart.sh
set -euo pipefail
ROWS=${ROWS:-8000000}
BUDGET_MB=${BUDGET_MB:-256}
WARM_SECONDS=${WARM_SECONDS:-60}
RUN_SECONDS=${RUN_SECONDS:-20}
REPS=${REPS:-3}
DIR=${DIR:-/tmp/warm_restart}
bin=$(dirname "$0")/../bazel-bin/bench/large_table_bench
args=(--case=rocksdb --rows="$ROWS" --dir="$DIR" --budget_mb="$BUDGET_MB")
list="$DIR/table0.hotkeys"

"$bin" "${args[@]}" --phase=build >/dev/null
"$bin" "${args[@]}" --phase=train --seconds="$WARM_SECONDS" 2>/dev/null |
  sed 's/^/warm-up run: /'
cp "$list" "$DIR.hotkeys"

drop_caches() {
  sync
  if [ -w /proc/sys/vm/drop_caches ]; then
    echo 1 >/proc/sys/vm/drop_caches
  else
    echo "(page cache not dropped: /proc/sys/vm/drop_caches not writable)"
  fi
}

results=$(mktemp)
for rep in $(seq 1 "$REPS"); do
  for mode in warm cold; do
    if [ "$mode" = warm ]; then cp "$DIR.hotkeys" "$list"; else rm -f "$list"; fi
    drop_caches
    line=$("$bin" "${args[@]}" --phase=train --seconds="$RUN_SECONDS" 2>/dev/null)
    first5=$(sed -n 's/.*first5_keys_per_s=\([0-9]*\).*/\1/p' <<<"$line")
    reach=$(sed -n 's/.*reach90_s=\(-\?[0-9]*\).*/\1/p' <<<"$line")
    steady=$(sed -n 's/.* keys_per_s=\([0-9]*\).*/\1/p' <<<"$line")
    total=$(sed -n 's/.*run_keys=\([0-9]*\).*/\1/p' <<<"$line")
    echo "rep $rep $mode: first 5 s $first5 keys/s, 90% of steady after ${reach} s, steady $steady keys/s, $total keys in ${RUN_SECONDS} s"
    echo "$mode $first5 $reach $steady $total" >>"$results"
  done
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for mode in ("warm", "cold"):
    r = [x for x in rows if x[0] == mode]
    med = lambda i: statistics.median(float(x[i]) for x in r)
    print(f"{mode}: median first 5 s {med(1):.0f} keys/s, 90% after {med(2):.0f} s, steady {med(3):.0f} keys/s, {med(4):.0f} keys in the run")
w = [x for x in rows if x[0] == "warm"]; c = [x for x in rows if x[0] == "cold"]
for i, what in ((1, "first 5 s"), (4, "keys in the run")):
    print("warm / cold, %s: %.2f" % (what, statistics.median(float(x[i]) for x in w) /
                                     max(1, statistics.median(float(x[i]) for x in c))))
PY
rm -f "$results"
