#!/usr/bin/env bash
# Continuous-training figures (issue 17), one run, same machine:
#  - freshness: seconds from a pass's done-marker to its model version being
#    published, for PASSES passes of ROWS rows (2 parts each) arriving every
#    INTERVAL seconds (a feeder writes each marker at its time, as a log
#    shipper would), trained by 2 pservers + 2 trainers (FM, dim 8): median
#    and p99 over the passes, and how long training waited per pass;
#  - the versions: delta and base size and write time, bytes per exported
#    row against bytes per row of the same rows in a RocksDB table;
#  - end to end: seconds from a pass's marker to the first Predict answered
#    by `sampan serve` (beside the job, following LATEST) with the version
#    that includes the pass;
#  - warm start load rate (rows/s) into the memory and RocksDB backends
#    (BulkLoad; RocksDB: one SST file ingested) against db_bench fillrandom
#    on the same key and value sizes (9-byte keys, the table's stored row).
# Usage: bench/stream_bench.sh [PASSES] [ROWS] [INTERVAL] [VOCAB_SCALE]
# (PASSES over 2 days: a base at each day's first pass; bazel build
# //cli:sampan first). Prints a summary; raw files stay in $DIR.
set -uo pipefail
PASSES=${1:-10}
ROWS=${2:-100000}
INTERVAL=${3:-20}
VOCAB=${4:-16}
SAMPAN=${SAMPAN:-bazel-bin/cli/sampan}
DIR=${DIR:-/tmp/sampan-stream-bench}
rm -rf "$DIR"; mkdir -p "$DIR/markers"

"$SAMPAN" gen-data --out="$DIR/data" --stream_days=2 \
  --passes_per_day=$((PASSES / 2)) --parts_per_pass=2 --rows="$ROWS" \
  --vocab_scale="$VOCAB" --seed=11 | tail -1
first=$(cd "$DIR/data" && ls -d */* | sort | head -1)
for d in "$DIR"/data/*/*/; do
  n=$(echo "$d" | sed 's|.*/data/||; s|/$||; s|/|-|')
  mv "$d/_SUCCESS" "$DIR/markers/$n"
done

job() {  # name backend extra-yaml
  cat > "$DIR/$1.yaml" <<YAML
name: stream-bench
output_dir: $DIR/$1
progress_interval_seconds: 5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 300}
model: {type: FM, embedding_dim: 8}
table: {num_shards: 16, backend: $2, data_dir: $DIR/$1/db}
data:
  format: CRITEO_TSV
  batch_size: 1024
  synthetic: {rows: 0}
  stream: {root: $DIR/data, poll_seconds: 1, idle_stop_seconds: $((INTERVAL + 15))}
$3
YAML
}

# 1. Freshness: markers released every INTERVAL seconds; `sampan serve`
# follows the job's versions, probed by a Python gRPC client.
job fresh MEMORY "serving: {poll_seconds: 0.2}"
/usr/bin/python3 -m grpc_tools.protoc -Iproto --python_out="$DIR" \
  --grpc_python_out="$DIR" proto/serving.proto
first_part=$(ls "$DIR"/data/*/*/part-* | head -1)
head -100 "$first_part" > "$DIR/probe.tsv"
"$SAMPAN" run "$DIR/fresh.yaml" > "$DIR/fresh.out" 2>&1 &
pid=$!
mkdir -p "$DIR/fresh"
"$SAMPAN" serve "$DIR/fresh.yaml" --port_file="$DIR/serve.port" > "$DIR/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do [ -s "$DIR/serve.port" ] && break; sleep 0.1; done
served() {
  /usr/bin/python3 tests/serving_client.py "$DIR" "127.0.0.1:$(cat "$DIR/serve.port")" \
    predict "$DIR/probe.tsv" 2>/dev/null | sed -n '1s/^version \([0-9]*\) .*/\1/p'
}
: > "$DIR/e2e.txt"
i=0
for m in $(ls "$DIR/markers" | sort); do
  sleep $([ $i -eq 0 ] && echo 3 || echo 1)
  d=$(echo "$m" | sed 's|-|/|')
  touch "$DIR/data/$d/_SUCCESS"
  t0=$(date +%s.%N)
  i=$((i + 1))
  until [ "$(served)" = "$i" ]; do
    sleep 0.1
    awk -v a="$t0" -v b="$(date +%s.%N)" -v l="$INTERVAL" 'BEGIN { exit !(b - a > 3 * l) }' && break
  done
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", b - a }' >> "$DIR/e2e.txt"
  left=$(awk -v a="$t0" -v b="$t1" -v l="$INTERVAL" 'BEGIN { s = l - 1 - (b - a); print (s > 0 ? s : 0) }')
  sleep "$left"
done
wait $pid || { echo "fresh job failed"; tail "$DIR/fresh.out"; exit 1; }
kill $server; wait $server 2>/dev/null
sort -n "$DIR/e2e.txt" | awk '{ v[NR] = $1 } END {
  printf "end to end (marker -> first prediction by its version): median %.2f s, max %.2f s over %d passes\n",
    (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR], NR }'
tail -n $((PASSES + 3)) "$DIR/fresh.out"

python3 - "$DIR" <<'PY'
import os, statistics, sys
d = sys.argv[1]
rows = [l.rstrip("\n").split("\t") for l in open(f"{d}/fresh/passes.tsv")][1:]
fresh = sorted(float(r[8]) for r in rows)
def pct(v, p):
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
print(f"freshness: median {statistics.median(fresh):.2f} s, p99 {pct(fresh, 99):.2f} s, "
      f"max {fresh[-1]:.2f} s over {len(fresh)} passes (goal: median < 60 s)")
for kind in ("base", "delta"):
    sel = [r for r in rows if r[7] == kind]
    if not sel: continue
    sizes, nrows = [], []
    for r in sel:
        vd = f"{d}/fresh/versions/v-{int(r[6]):06d}"
        if not os.path.isdir(vd): continue
        b = sum(os.path.getsize(f"{vd}/{f}") for f in os.listdir(vd) if f.startswith("sparse-"))
        n = int(next(l.split(":")[1] for l in open(f"{vd}/VERSION") if l.startswith("rows:")))
        sizes.append(b); nrows.append(n)
    stall = statistics.median(float(r[10]) for r in sel)
    pub = statistics.median(float(r[11]) for r in sel)
    line = (f"{kind}: {len(sel)} versions, training waited median {stall:.3f} s, "
            f"publish median {pub:.3f} s")
    if sizes:
        line += (f", median {statistics.median(sizes) / 1e6:.1f} MB for "
                 f"{statistics.median(nrows):.0f} rows "
                 f"({sum(sizes) / max(1, sum(nrows)):.1f} bytes/row exported)")
    print(line)
PY

# 2. Warm start from the last version into each backend; db_bench alongside.
for backend in MEMORY ROCKSDB; do
  name=warm-$(echo $backend | tr A-Z a-z)
  job "$name" "$backend" "init_model: $DIR/fresh/versions"
  sed -i "s|idle_stop_seconds: [0-9]*|idle_stop_seconds: 1, start_pass: \"$first\", end_pass: \"$first\"|" "$DIR/$name.yaml"
  "$SAMPAN" run "$DIR/$name.yaml" > "$DIR/$name.out" 2>&1
  grep -h "warm start from" "$DIR/$name"/logs/pserver-*.log |
    sed 's/.*: \([0-9]*\) of \([0-9]*\) rows.* loaded in \([0-9.e-]*\) s (\([0-9.e+]*\) rows\/s).*/\1 \3 \4/' |
    awk -v b=$backend '{ n += $1; s = $2 > s ? $2 : s } END {
      printf "warm start %s: %d rows on 2 pservers, slowest load %.3f s: %.0f rows/s per pserver\n",
        b, n, s, n / 2 / s }'
done
# The table's SST files (not the redo log or RocksDB's own logs).
db=$(find "$DIR/warm-rocksdb/db" -name '*.sst' -printf '%s\n' | awk '{ s += $1 } END { print s }')
n=$(grep -h "warm start from" "$DIR/warm-rocksdb"/logs/pserver-*.log |
  sed 's/.*: \([0-9]*\) of.*/\1/' | awk '{ s += $1 } END { print s }')
echo "RocksDB table after the warm start and one pass: $db bytes of SST files for >= $n rows ($((db / n)) bytes/row)"
# FM dim 8, Adagrad: [show, click, unseen, has_v, w, w_state, v[8], v_state]
# = 15 floats + the 4-byte epoch; key 's' + 4-byte shard + 8-byte key.
per=$((n / 2))
rm -rf "$DIR/dbb"
db_bench --benchmarks=fillrandom --num="$per" --key_size=13 --value_size=64 \
  --batch_size=4096 --compression_type=none --disable_wal=1 --threads=1 \
  --db="$DIR/dbb" 2>/dev/null | awk '/^fillrandom / {
    for (i = 1; i <= NF; i++) if ($(i+1) == "ops/sec") print "db_bench fillrandom (no WAL, batches of 4096): " $i " rows/s" }'
