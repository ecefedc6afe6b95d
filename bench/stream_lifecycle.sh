#!/usr/bin/env bash
# Table lifecycle on a drifting stream (issue 17): the same passes trained
# twice, without eviction and with it (the day's shrink: show/click decay
# 0.98, rows scoring below DELETE_THRESHOLD or unseen for more than
# UNSEEN_DAYS days deleted), 2 pservers x 2 trainers, FM dim 8. Prints the
# table's rows at each day's base and the mean progressive AUC of the passes
# after day 1 for both; the lifecycle should bound the rows and cost at most
# 0.005 AUC.
# Usage: bench/stream_lifecycle.sh [DAYS] [PASSES_PER_DAY] [ROWS] [DRIFT]
set -uo pipefail
DAYS=${1:-5}
PER_DAY=${2:-4}
ROWS=${3:-25000}
DRIFT=${4:-0.2}
DELETE_THRESHOLD=${DELETE_THRESHOLD:-0.5}
UNSEEN_DAYS=${UNSEEN_DAYS:-1}
SAMPAN=${SAMPAN:-bazel-bin/cli/sampan}
DIR=${DIR:-/tmp/sampan-lifecycle-bench}
rm -rf "$DIR"; mkdir -p "$DIR"
"$SAMPAN" gen-data --out="$DIR/data" --stream_days="$DAYS" \
  --passes_per_day="$PER_DAY" --parts_per_pass=2 --rows="$ROWS" \
  --drift="$DRIFT" --seed=13 | tail -1

for mode in keep evict; do
  accessor="{delete_threshold: 0, delete_after_unseen_days: 30}"
  [ $mode = evict ] && accessor="{show_decay_rate: 0.98, delete_threshold: $DELETE_THRESHOLD, delete_after_unseen_days: $UNSEEN_DAYS}"
  cat > "$DIR/$mode.yaml" <<YAML
name: lifecycle-$mode
output_dir: $DIR/$mode
progress_interval_seconds: 10
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1}
model: {type: FM, embedding_dim: 8}
table:
  num_shards: 16
  accessor: $accessor
data:
  format: CRITEO_TSV
  batch_size: 1024
  synthetic: {rows: 0}
  stream: {root: $DIR/data, poll_seconds: 0.2, idle_stop_seconds: 1,
           keep_bases: 100}
YAML
  "$SAMPAN" run "$DIR/$mode.yaml" > "$DIR/$mode.out" 2>&1 || { tail "$DIR/$mode.out"; exit 1; }
done

python3 - "$DIR" "$PER_DAY" <<'PY'
import statistics, sys
d, per_day = sys.argv[1], int(sys.argv[2])
def load(mode):
    rows = [l.rstrip("\n").split("\t") for l in open(f"{d}/{mode}/passes.tsv")][1:]
    bases = {}
    for r in rows:
        if r[7] != "base": continue
        v = f"{d}/{mode}/versions/v-{int(r[6]):06d}/VERSION"
        bases[r[1]] = int(next(l.split(":")[1] for l in open(v) if l.startswith("rows:")))
    later = [float(r[3]) for r in rows if int(r[0]) >= per_day]
    evicted = sum(int(r[9]) for r in rows)
    return bases, statistics.mean(later), evicted
kb, ka, _ = load("keep")
eb, ea, ev = load("evict")
print("day base     rows kept   rows with lifecycle")
for name in kb:
    print(f"{name:12s} {kb[name]:10d} {eb.get(name, 0):12d}")
print(f"rows evicted in all: {ev}")
print(f"mean progressive AUC after day 1: keep {ka:.4f}, lifecycle {ea:.4f}, "
      f"difference {ea - ka:+.4f} (goal: within 0.005)")
PY
