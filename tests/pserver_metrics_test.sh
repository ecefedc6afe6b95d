#!/usr/bin/env bash
# A pserver's /metrics after real traffic and a shard moved out and back in:
# the exposition passes `promtool check metrics`, and the counters show the
# traffic and the move.
set -euo pipefail

SAMPAN="${TEST_SRCDIR}/${TEST_WORKSPACE}/cli/sampan"
LOAD="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/ps_counter_load"
TMP="${TEST_TMPDIR}"
command -v promtool > /dev/null || { echo "FAIL: promtool missing (install-deps installs prometheus)"; exit 1; }

cat > "$TMP/job.yaml" <<YAML
cluster: {num_pservers: 1, num_trainers: 1}
model: {type: LR}
table: {num_shards: 8, optimizer: {type: SGD, learning_rate: 1.0}}
output_dir: $TMP/out
YAML
"$SAMPAN" pserver --config="$TMP/job.yaml" --index=0 --port_file="$TMP/port" \
  --metrics_port=0 > "$TMP/pserver.log" 2>&1 &
pserver=$!
trap 'kill $pserver 2>/dev/null || true; wait $pserver 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$TMP/port" ] && break; sleep 0.05; done
metrics_url=$(sed -n 's/.*metrics on \(http[^ ]*\).*/\1/p' "$TMP/pserver.log")
[ -n "$metrics_url" ] || { echo "FAIL: no metrics address in the log"; cat "$TMP/pserver.log"; exit 1; }

"$LOAD" --pservers="127.0.0.1:$(cat "$TMP/port")" --num_shards=8 --keys=300 --rounds=4

# A shard moved out and back in through the shard move RPCs (Python grpcio).
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/python_grpc.sh"
python_stubs "$TMP/gen" ps.proto
moved=$("$PY" "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/ps_move.py" "$TMP/gen" \
  "127.0.0.1:$(cat "$TMP/port")" 8 3)
echo "moved=$moved"
awk -v m="$moved" 'BEGIN { exit !(m > 0) }' || { echo "FAIL: shard 3 moved $moved rows"; exit 1; }

curl -sf "$metrics_url" > "$TMP/metrics.txt"
promtool check metrics < "$TMP/metrics.txt"
value() { awk -v m="$1" '$1 == m { print $2 }' "$TMP/metrics.txt"; }
pushed=$(value 'sampan_pserver_keys_total{method="Push"}')
pulled=$(value 'sampan_pserver_keys_total{method="Pull"}')
rss=$(value process_resident_memory_bytes)
echo "pushed=$pushed pulled=$pulled rss=$rss"
awk -v p="$pushed" 'BEGIN { exit !(p >= 300) }' || { echo "FAIL: pushed keys $pushed < 300"; exit 1; }
[ "$pulled" = "300" ] || { echo "FAIL: pulled keys $pulled, want 300"; exit 1; }
awk -v r="$rss" 'BEGIN { exit !(r > 1e6) }' || { echo "FAIL: resident memory $rss"; exit 1; }
grep -q 'sampan_pserver_request_duration_seconds_bucket{method="Pull",le="+Inf"} 1$' "$TMP/metrics.txt" \
  || { echo "FAIL: pull latency histogram"; grep duration "$TMP/metrics.txt"; exit 1; }
for direction in export import; do
  rows=$(value "sampan_pserver_shard_move_rows_total{direction=\"$direction\"}")
  [ "$rows" = "$moved" ] || { echo "FAIL: $direction rows moved $rows, want $moved"; exit 1; }
  grep -q "sampan_pserver_shard_move_duration_seconds_count{direction=\"$direction\"} 1$" "$TMP/metrics.txt" \
    || { echo "FAIL: $direction move duration"; grep shard_move "$TMP/metrics.txt"; exit 1; }
done
[ "$(value sampan_pserver_shards_moving)" = "0" ] || { echo "FAIL: shards_moving"; exit 1; }
[ "$(value sampan_pserver_shard_map_version)" = "4" ] || { echo "FAIL: shard_map_version"; exit 1; }
echo "ok: metrics pass promtool and count the traffic"
