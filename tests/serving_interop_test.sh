#!/usr/bin/env bash
# `sampan serve` as a process, driven by Python's grpcio (stubs generated
# from proto/serving.proto now): health NOT_SERVING until a model appears,
# then SERVING; the probabilities of a held-out file give `sampan eval`'s
# logloss; a malformed call is INVALID_ARGUMENT; /metrics passes
# `promtool check metrics`; SIGTERM stops it cleanly. The rows are served
# from a RocksDB store (serving.store_dir), whose metrics are checked too.
set -euo pipefail

SAMPAN="${TEST_SRCDIR}/${TEST_WORKSPACE}/cli/sampan"
CLIENT="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/serving_client.py"
TMP="${TEST_TMPDIR}"

source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/python_grpc.sh"
command -v promtool > /dev/null || { echo "FAIL: promtool missing (install-deps installs prometheus)"; exit 1; }
python_stubs "$TMP/gen" serving.proto

"$SAMPAN" gen-data --out="$TMP/data" --rows=3000 --seed=5 > /dev/null
cat > "$TMP/job.yaml" <<YAML
name: serve-interop
model: {type: DEEPFM, embedding_dim: 4, hidden: [8]}
data:
  synthetic: {rows: 0}
  train_files: [$TMP/data/train.tsv]
  test_files: [$TMP/data/test.tsv]
output_dir: $TMP/out
serving: {model: $TMP/served, poll_seconds: 0.1, max_examples_per_request: 200,
          store_dir: $TMP/store, memory_budget_mb: 8}
YAML

# The server starts before its model exists.
"$SAMPAN" serve "$TMP/job.yaml" --port_file="$TMP/port" --metrics_port=0 \
  --metrics_port_file="$TMP/metrics_port" > "$TMP/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do [ -s "$TMP/port" ] && [ -s "$TMP/metrics_port" ] && break; sleep 0.05; done
address="127.0.0.1:$(cat "$TMP/port")"
health=$("$PY" "$CLIENT" "$TMP/gen" "$address" health)
[ "$health" = NOT_SERVING ] || { echo "FAIL: health $health before a model"; exit 1; }

"$SAMPAN" train-local "$TMP/job.yaml" > "$TMP/train.log" 2>&1
cp -r "$TMP/out/model" "$TMP/served.tmp" && mv "$TMP/served.tmp" "$TMP/served"
for _ in $(seq 1 100); do
  health=$("$PY" "$CLIENT" "$TMP/gen" "$address" health)
  [ "$health" = SERVING ] && break
  sleep 0.1
done
[ "$health" = SERVING ] || { echo "FAIL: health $health after the model appeared"; cat "$TMP/serve.log"; exit 1; }

"$PY" "$CLIENT" "$TMP/gen" "$address" predict "$TMP/data/test.tsv" > "$TMP/probs.txt"
head -1 "$TMP/probs.txt"
eval_logloss=$("$SAMPAN" eval "$TMP/served" "$TMP/data/test.tsv" 2> /dev/null |
  sed -n 's/.*logloss \([^ ]*\) .*/\1/p')
served_logloss=$(cut -f1 "$TMP/data/test.tsv" | paste - <(tail -n +2 "$TMP/probs.txt") |
  awk '{ p = $2; if (p < 1e-7) p = 1e-7; if (p > 1 - 1e-7) p = 1 - 1e-7;
         s -= $1 > 0.5 ? log(p) : log(1 - p) } END { printf "%.6f", s / NR }')
echo "eval logloss $eval_logloss, served $served_logloss"
awk -v a="$eval_logloss" -v b="$served_logloss" 'BEGIN { d = a - b; exit !(d < 2e-6 && d > -2e-6) }' ||
  { echo "FAIL: served probabilities give another logloss than eval"; exit 1; }

curl -sf "http://127.0.0.1:$(cat "$TMP/metrics_port")/metrics" > "$TMP/metrics.txt"
promtool check metrics < "$TMP/metrics.txt"
value() { awk -v m="$1" '$1 == m { print $2 }' "$TMP/metrics.txt"; }
ok=$(value 'sampan_serving_requests_total{code="OK"}')
bad=$(value 'sampan_serving_requests_total{code="INVALID_ARGUMENT"}')
rows=$(value sampan_serving_model_rows)
store_bytes=$(value sampan_serving_store_bytes)
lookups=$(awk '$1 ~ /^sampan_serving_store_cache_lookups_total/ { s += $2 } END { print s + 0 }' "$TMP/metrics.txt")
ratio=$(value sampan_serving_store_cache_hit_ratio)
echo "requests ok=$ok invalid=$bad rows=$rows store_bytes=$store_bytes block reads=$lookups hit ratio=$ratio"
[ "$ok" -ge 2 ] && [ "$bad" = 1 ] && [ "$rows" -gt 100 ] || { echo "FAIL: metrics"; grep sampan_serving "$TMP/metrics.txt"; exit 1; }
awk -v b="$store_bytes" -v l="$lookups" -v r="$ratio" 'BEGIN { exit !(b > 0 && l > 0 && r >= 0 && r <= 1) }' ||
  { echo "FAIL: store metrics"; grep sampan_serving_store "$TMP/metrics.txt"; exit 1; }
[ -d "$TMP/store" ] || { echo "FAIL: no store in $TMP/store"; exit 1; }

kill -TERM $server
wait $server || { echo "FAIL: serve exited with $? on SIGTERM"; exit 1; }
trap - EXIT
echo "ok: python client, health, eval-equal probabilities, metrics, clean stop"
