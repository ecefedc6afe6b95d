#!/usr/bin/env bash
# Runs every sparse_table_bench case and db_bench (rocksdb-tools) on the same
# key and value sizes, side by side, REPS times per dim; prints the median of
# each figure. Build first: bazel build //bench:sparse_table_bench
#
#   bench/sparse_table_bench.sh [ROWS=1000000] [REPS=3] [DIMS="8 16 64"]
#                               [CASES="hashmap memory hot cold"]
#                               [LOGS="redo rocksdb_wal"] (also redo_memtable) [SYNC=0|1]
#                               [SETTLE=0] (seconds the cold case waits for
#                               compactions before its uniform pull)
#
# The RocksDB cases (hot, cold) run once per durability log in LOGS, in
# alternation, labelled case=hot/redo etc.; SYNC=1 also runs hot with
# durability sync (fdatasync before each ack) per log.
set -euo pipefail
ROWS=${ROWS:-1000000}
REPS=${REPS:-3}
DIMS=${DIMS:-"8 16 64"}
BATCHES=${BATCHES:-100}
CASES=${CASES:-"hashmap memory hot cold"}
LOGS=${LOGS:-"redo rocksdb_wal"}
SYNC=${SYNC:-0}
SETTLE=${SETTLE:-0}
BIN=${BIN:-bazel-bin/bench/sparse_table_bench}
DIR=${TMPDIR:-/tmp}/sparse_table_bench.$$
OUT=$DIR/results.txt
mkdir -p "$DIR"
trap 'rm -rf "$DIR/db" "$DIR/rocks"' EXIT

for dim in $DIMS; do
  for rep in $(seq "$REPS"); do
    for c in $CASES; do
      if [ "$c" = hot ] || [ "$c" = cold ]; then
        for log in $LOGS; do
          "$BIN" --case=$c --dim="$dim" --rows="$ROWS" --batches="$BATCHES" \
            --dir="$DIR/rocks" --log="$log" --settle_seconds="$SETTLE" |
            sed "s|case=$c |case=$c/$log |" >>"$OUT"
          if [ "$SYNC" = 1 ] && [ "$c" = hot ]; then
            "$BIN" --case=$c --dim="$dim" --rows="$ROWS" --batches="$BATCHES" \
              --dir="$DIR/rocks" --log="$log" --durability=sync |
              sed "s|case=$c |case=$c-sync/$log |" >>"$OUT"
          fi
        done
      else
        "$BIN" --case=$c --dim="$dim" --rows="$ROWS" --batches="$BATCHES" \
          --dir="$DIR/rocks" >>"$OUT"
      fi
    done
    vb=$(grep "dim=$dim .*value_bytes=" "$OUT" | head -1 |
      sed 's/.*value_bytes=\([0-9]*\).*/\1/')
    rm -rf "$DIR/db"
    # Same key (13 bytes) and value (row + 4-byte epoch) sizes, batches of
    # 4096 per WriteBatch / MultiGet, no compression, Bloom filters.
    db_bench --benchmarks=fillrandom,multireadrandom --num="$ROWS" \
      --reads=$((BATCHES * 4096)) --key_size=13 --value_size=$((vb + 4)) \
      --batch_size=4096 --multiread_batched --compression_type=none \
      --bloom_bits=10 --threads=1 --db="$DIR/db" 2>/dev/null |
      awk -v dim="$dim" '/^(fillrandom|multireadrandom) / {
        for (i = 1; i <= NF; i++) if ($(i+1) == "ops/sec") v = $i;
        printf "case=db_bench dim=%s %s_keys_per_s=%s\n", dim, $1, v }' \
      >>"$OUT"
  done
done

python3 - "$OUT" <<'PY'
import collections, statistics, sys
vals = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = dict(kv.split("=", 1) for kv in line.split())
    for k, v in f.items():
        if k in ("case", "dim", "log", "durability"):
            continue
        try:
            vals[(f["dim"], f["case"], k)].append(float(v))
        except ValueError:
            pass
for (dim, case, k), v in sorted(vals.items(), key=lambda x: (int(x[0][0]), x[0][1], x[0][2])):
    print(f"dim={dim} {case:22s} {k:28s} median={statistics.median(v):.1f} n={len(v)} all={v}")
PY
echo "raw: $OUT"
