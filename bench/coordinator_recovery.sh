#!/usr/bin/env bash
# Coordinator recovery time under `sampan run` (issue 25): a 2-pserver,
# 2-trainer LR job (the fault suite's, trained for EPOCHS epochs) whose
# coordinator is SIGKILLed KILLS times, GAP seconds apart. For each kill:
#   - back: from the kill to the restarted coordinator answering (its
#     "serving on" log line);
#   - members: to the last of the 4 members registered with it again;
#   - rate: the fleet's pushed keys/s (both pservers' /metrics,
#     sampan_pserver_keys_total{method="Push"}, scraped every 0.2 s) in the
#     2 s after the kill over the 2 s before (training needs no
#     coordinator, so the goal is no dip), and the seconds until a 0.4 s
#     window is back at >= 90% of the rate before ("full rate again").
# Prints one line per kill and the medians. Needs bazel-bin/cli/sampan.
#   bazel build //cli:sampan //tests:ps_counter_load && bench/coordinator_recovery.sh
set -uo pipefail
KILLS=${KILLS:-5}
GAP=${GAP:-4}
export FAULT_EPOCHS=${EPOCHS:-12}
source "$(dirname "$0")/../tests/fault/lib.sh"
trap cleanup_job EXIT

job="$TMP/recovery"
write_job "$job"
start_job "$job" || exit 1
# The fleet's pushed keys so far, every 0.2 s: "unix-seconds keys".
python3 - "$job" $launcher > "$job/rate.tsv" <<'PY' &
import os, re, sys, time, urllib.request
job, launcher = sys.argv[1], int(sys.argv[2])
pat = re.compile(r'^sampan_pserver_keys_total\{method="Push"\} (\S+)$', re.M)
def alive():
    try: os.kill(launcher, 0); return True
    except OSError: return False
while alive():
    total = 0.0
    for p in ("pserver-0", "pserver-1"):
        try:
            port = open(f"{job}/metrics/{p}.port").read().strip()
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=0.5).read().decode()
            m = pat.search(body)
            total += float(m.group(1)) if m else 0
        except Exception:
            pass
    print(f"{time.time():.3f} {total:.0f}", flush=True)
    time.sleep(0.2)
PY
scraper=$!
sleep "$GAP"
: > "$job/kills.tsv"
for k in $(seq 1 "$KILLS"); do
  victim=$(pgrep -f -- "coordinator --config=$job/job.pbtxt" | head -1)
  [ -n "$victim" ] || break
  echo "$(date +%s.%N)" >> "$job/kills.tsv"
  kill -9 "$victim"
  sleep "$GAP"
done
wait $launcher; rc=$?
wait $scraper 2> /dev/null
[ $rc -eq 0 ] || { echo "job failed ($rc)"; tail "$job.out"; exit 1; }

# Coordinator log timestamps ("I HH:MM:SS.mmm ...") as seconds of the day.
awk '
  function tod(s,  h) { split(s, h, ":"); return h[1] * 3600 + h[2] * 60 + h[3] }
  /serving on/ { print "back", tod($2) }
  /registered (PSERVER|TRAINER)/ { print "reg", tod($2) }
' "$job/logs/coordinator.log" > "$job/coord.tsv"
python3 - "$job" <<'PY'
import sys, time, statistics
job = sys.argv[1]
kills = [float(l) for l in open(f"{job}/kills.tsv")]
rate = [tuple(map(float, l.split())) for l in open(f"{job}/rate.tsv") if len(l.split()) == 2]
ev = [l.split() for l in open(f"{job}/coord.tsv")]
def tod(t):
    lt = time.localtime(t); return lt.tm_hour * 3600 + lt.tm_min * 60 + lt.tm_sec + (t % 1)
def keys_per_s(a, b):
    pts = [(t, k) for t, k in rate if a <= t <= b]
    return (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0]) if len(pts) >= 2 and pts[-1][0] > pts[0][0] else float("nan")
rows = []
for kt in kills:
    k = tod(kt)
    back = min((float(t) for e, t in ev if e == "back" and float(t) > k), default=float("nan"))
    regs = sorted(float(t) for e, t in ev if e == "reg" and float(t) > k)
    members = regs[3] if len(regs) >= 4 else float("nan")
    before = keys_per_s(kt - 2, kt)
    after = keys_per_s(kt, kt + 2)
    full = float("nan")
    t = kt
    while t < kt + 4:
        if keys_per_s(t, t + 0.4) >= 0.9 * before: full = t - kt; break
        t += 0.2
    rows.append((back - k, members - k, after / before, full))
    print(f"kill at {time.strftime('%H:%M:%S', time.localtime(kt))}: back {back - k:.2f} s, "
          f"4 members registered {members - k:.2f} s, keys/s after/before {after:.0f}/{before:.0f} = {after / before:.2f}, "
          f"full rate again after {full:.1f} s")
med = [statistics.median(c) for c in zip(*rows)]
print(f"median of {len(rows)} kills: back {med[0]:.2f} s, members registered {med[1]:.2f} s, "
      f"rate ratio {med[2]:.2f}, full rate again {med[3]:.1f} s")
PY
tail -3 "$job.out"
