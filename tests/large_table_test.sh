#!/usr/bin/env bash
# The small version of bench/large_table_bench.sh (issue 20 item 2): 3 M
# rows bulk loaded into a RocksDB table, then, in a fresh process as a
# restarted pserver, trained with Zipf pull + push steps under a 64 MB hot
# tier. The bulk load must account for every row, the trained table must
# read some keys from disk (the tier cannot hold the table) and its peak
# RSS stays within 1.25x the budget.
set -uo pipefail
BIN="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/bench/large_table_bench"
[ -x "$BIN" ] || BIN=bazel-bin/bench/large_table_bench
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
field() { sed -n "s/.* $1=\([0-9.e+-]*\).*/\1/p" <<< "$2"; }

build=$("$BIN" --case=rocksdb --phase=build --rows=3000000 --chunk=500000 \
  --dir="$TMP/table" 2> "$TMP/build.err") || { fail "build: $(tail -3 "$TMP/build.err")"; }
echo "$build"
rate=$(field build_rows_per_s "$build"); bytes=$(field disk_bytes_per_row "$build")
awk -v r="${rate:-0}" -v b="${bytes:-0}" 'BEGIN { exit !(r > 0 && b >= 80 && b <= 200) }' \
  && pass "bulk load: $rate rows/s, $bytes disk bytes a row (dim 16: 68 B of floats)" \
  || fail "bulk load: rate '$rate', disk bytes a row '$bytes' (expected 80-200)"

train=$("$BIN" --case=rocksdb --phase=train --rows=3000000 --dir="$TMP/table" \
  --budget_mb=64 --seconds=6 2> "$TMP/train.err") || fail "train: $(tail -3 "$TMP/train.err")"
echo "$train"
keys=$(field keys_per_s "$train"); cold=$(field cold_share "$train")
peak=$(field table_peak_rss_mb "$train")
awk -v k="${keys:-0}" 'BEGIN { exit !(k > 0) }' && pass "trained: $keys keys/s" \
  || fail "no keys trained: '$keys'"
awk -v c="${cold:--1}" 'BEGIN { exit !(c > 0.01 && c < 1) }' \
  && pass "cold-read share $cold: the 64 MB tier does not hold the table's ~330 MB" \
  || fail "cold share '$cold' (expected in (0.01, 1))"
[ "$(field rss_within_budget "$train")" = 1 ] \
  && pass "table peak RSS $peak MB within 1.25x the 64 MB budget" \
  || fail "table peak RSS $peak MB over 1.25x the 64 MB budget"
if [ $failures -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all checks passed"
