#!/usr/bin/env bash
# The fleet's throughput while it rescales (issue 19): the fault suite's LR
# job (2 pservers, 2 trainers, RocksDB, 32 shards) trains; after BEFORE
# seconds `sampan scale --pservers=TO` (default 2 -> 4) runs to the end,
# then AFTER seconds more. Every 0.2 s a scraper sums each live pserver's
# sampan_pserver_keys_total{method="Push"} increase (a pserver's counter
# counts from its own start; one that is gone adds nothing), giving the
# fleet's pushed keys/s, and the trainers' examples/s from the coordinator.
# Prints the rates before the scale (median of 1 s windows), the lowest
# window during it and the seconds spent below 50% of the rate before
# (goal: none), the rates after (the bigger fleet shares the same cores
# here), the scale's duration, and writes <job>/scale_rate.svg: keys/s over
# time with the scale marked. The job checkpoints every CKPT_SECONDS (300:
# after the rescale), not at the fault suite's pace.
#   bazel build //cli:sampan //tests:ps_counter_load && bench/scale_rate.sh
set -uo pipefail
TO=${TO:-4}
BEFORE=${BEFORE:-5}
AFTER=${AFTER:-4}
export FAULT_EPOCHS=${EPOCHS:-80}
source "$(dirname "$0")/../tests/fault/lib.sh"
trap cleanup_job EXIT

job="$TMP/scale-rate"
write_job "$job"
# No checkpoint during the rescale (not the fault suite's every 100 steps):
# the pauses they cost would hide the rescale's own.
sed -i "s/^checkpoint: .*/checkpoint: {every_seconds: ${CKPT_SECONDS:-300}, keep: 2}/" "$job.yaml"
start_job "$job" || exit 1
# "unix-seconds keys-pushed examples-trained" in each 0.2 s interval (the
# examples from the coordinator's sampan_job_examples_total, all ranks).
python3 - "$job" $launcher > "$job/rate.tsv" <<'PY' &
import glob, os, re, sys, time, urllib.request
job, launcher = sys.argv[1], int(sys.argv[2])
pat = re.compile(r'^sampan_pserver_keys_total\{method="Push"\} (\S+)$', re.M)
ex_pat = re.compile(r'^sampan_job_examples_total\{rank="\d+"\} (\S+)$', re.M)
last = {}
last_ex = None
def alive():
    try: os.kill(launcher, 0); return True
    except OSError: return False
while alive():
    ex_added = 0.0
    try:
        port = open(f"{job}/metrics/coordinator.port").read().strip()
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=0.3).read().decode()
        ex = sum(float(v) for v in ex_pat.findall(body))
        if last_ex is not None and ex >= last_ex: ex_added = ex - last_ex
        last_ex = ex
    except Exception:
        pass
    added = 0.0
    for f in glob.glob(f"{job}/metrics/pserver-*.port"):
        try:
            port = open(f).read().strip()
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=0.3).read().decode()
            m = pat.search(body)
        except Exception:
            continue
        if not m: continue
        v = float(m.group(1))
        key = (f, port)
        if key in last and v >= last[key]: added += v - last[key]
        last[key] = v
    print(f"{time.time():.3f} {added:.0f} {ex_added:.0f}", flush=True)
    time.sleep(0.2)
PY
scraper=$!
sleep "$BEFORE"
t0=$(date +%s.%N)
"$SAMPAN" scale "$job.yaml" --pservers="$TO" --wait_seconds=300 > "$job/scale.out" 2>&1 ||
  { echo "scale failed: $(cat "$job/scale.out")"; exit 1; }
t1=$(date +%s.%N)
sleep "$AFTER"
kill -TERM $launcher; wait $launcher 2>/dev/null
wait $scraper 2>/dev/null
python3 - "$job" "$t0" "$t1" "$TO" <<'PY'
import statistics, sys
job, t0, t1, to = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
rows = [tuple(map(float, l.split())) for l in open(f"{job}/rate.tsv") if len(l.split()) == 3][1:]
pts = [(t, k) for t, k, e in rows]
ex_pts = [(t, e) for t, k, e in rows]
def window(a, b, series=None):  # per second over [a, b)
    ks = sum(k for t, k in (series or pts) if a <= t < b)
    return ks / (b - a)
start = pts[0][0]
before = statistics.median(window(t, t + 1) for t in [start + 0.2 * i for i in range(int((t0 - start - 1) / 0.2))])
during = [(t, window(t, t + 1)) for t in [t0 + 0.2 * i for i in range(max(1, int((t1 - t0) / 0.2)))]]
low_t, low = min(during, key=lambda p: p[1])
below = 0.2 * sum(1 for t, r in during if r < 0.5 * before)
after = statistics.median(window(t, t + 1) for t in [t1 + 0.5 + 0.2 * i for i in range(10)])
print(f"2 -> {to} pservers in {t1 - t0:.1f} s; pushed keys/s: before {before:.0f}, "
      f"lowest 1 s window during {low:.0f} ({low / before:.2f} of before, at +{low_t - t0:.1f} s), "
      f"{below:.1f} s below 50%, median during {statistics.median(r for _, r in during):.0f}, "
      f"after {after:.0f} ({after / before:.2f})")
# Examples trained per second (the coordinator sees heartbeats about once a
# second, so 2 s windows).
ex_before = statistics.median(window(t, t + 2, ex_pts) for t in [start + 0.2 * i for i in range(int((t0 - start - 2) / 0.2))])
ex_during = [window(t, t + 2, ex_pts) for t in [t0 + 0.2 * i for i in range(max(1, int((t1 - t0 - 2) / 0.2)))]]
ex_after = statistics.median(window(t, t + 2, ex_pts) for t in [t1 + 0.5 + 0.2 * i for i in range(5)])
print(f"examples/s: before {ex_before:.0f}, lowest 2 s window during {min(ex_during):.0f} "
      f"({min(ex_during) / ex_before:.2f}), median during {statistics.median(ex_during):.0f} "
      f"({statistics.median(ex_during) / ex_before:.2f}), after {ex_after:.0f} ({ex_after / ex_before:.2f})")
PY
echo "$t0 $t1" > "$job/scale_times.txt"
python3 "$(dirname "$0")/scale_rate_plot.py" "$job" "$t0" "$t1" "$TO" > "$job/scale_rate.svg" &&
  echo "picture: $job/scale_rate.svg"
