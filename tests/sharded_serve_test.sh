#!/usr/bin/env bash
# Sharded serving as processes on real ports: a stream job publishes
# versions; 2 lookup shards (`sampan serve --role=lookup --shard=i`, each
# holding its shards' rows in a RocksDB store) and a predictor front end
# (`--role=predictor --shards=...`) serve them. Checks: the front end's
# probabilities equal a one-process server's (and eval's logloss); a
# SIGKILLed shard fails calls with UNAVAILABLE within the lookup deadline,
# and serving recovers once it is restarted on its port; a SIGSTOPped shard
# likewise until SIGCONT; /metrics of the front end and of a shard (its
# calls by method and code, latency) pass promtool; SIGTERM stops all.
set -euo pipefail

SAMPAN="${TEST_SRCDIR}/${TEST_WORKSPACE}/cli/sampan"
CLIENT="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/serving_client.py"
TMP="${TEST_TMPDIR}"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/python_grpc.sh"
command -v promtool > /dev/null || { echo "FAIL: promtool missing (install-deps installs prometheus)"; exit 1; }
python_stubs "$TMP/gen" serving.proto

data="$TMP/stream"
"$SAMPAN" gen-data --out="$data" --stream_days=1 --passes_per_day=2 \
  --parts_per_pass=2 --rows=3000 --seed=4 > /dev/null
cat "$data"/20261201/12/part-* > "$TMP/pass12.tsv"
head -n 400 "$TMP/pass12.tsv" > "$TMP/probe.tsv"
cat > "$TMP/job.yaml" <<YAML
name: sharded-serve
output_dir: $TMP/out
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1}
model: {type: DEEPFM, embedding_dim: 4, hidden: [8]}
table: {num_shards: 8}
data:
  format: CRITEO_TSV
  batch_size: 256
  synthetic: {rows: 0}
  stream: {root: $data, poll_seconds: 0.2, end_pass: "20261201/12"}
serving: {poll_seconds: 0.2, max_examples_per_request: 1000, shards: 2,
          store_dir: $TMP/store, memory_budget_mb: 8,
          lookup_deadline_seconds: 1}
YAML
"$SAMPAN" run "$TMP/job.yaml" > "$TMP/run.log" 2>&1 ||
  { echo "FAIL: the stream job"; tail -20 "$TMP/run.log"; exit 1; }
latest=$(sed -n 's/^v-0*//p' "$TMP/out/versions/LATEST")
echo "versions published up to $latest"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
wait_port() {  # file
  for _ in $(seq 1 200); do [ -s "$1" ] && return 0; sleep 0.05; done
  echo "FAIL: no port in $1"; exit 1
}
start_shard() {  # i [port]
  rm -f "$TMP/shard$1.port" "$TMP/shard$1.metrics"
  "$SAMPAN" serve "$TMP/job.yaml" --role=lookup --shard="$1" --port="${2:-0}" \
    --port_file="$TMP/shard$1.port" --metrics_port=0 \
    --metrics_port_file="$TMP/shard$1.metrics" >> "$TMP/shard$1.log" 2>&1 &
  shard_pid[$1]=$!
  pids+=($!)
  wait_port "$TMP/shard$1.port"
}
declare -a shard_pid
start_shard 0
start_shard 1
port0=$(cat "$TMP/shard0.port")
port1=$(cat "$TMP/shard1.port")
"$SAMPAN" serve "$TMP/job.yaml" --role=predictor \
  --shards=127.0.0.1:$port0,127.0.0.1:$port1 --port_file="$TMP/front.port" \
  --metrics_port=0 --metrics_port_file="$TMP/metrics.port" > "$TMP/front.log" 2>&1 &
front=$!
pids+=($front)
sed 's/ shards: 2,//' "$TMP/job.yaml" > "$TMP/single.yaml"
"$SAMPAN" serve "$TMP/single.yaml" --port_file="$TMP/single.port" > "$TMP/single.log" 2>&1 &
single=$!
pids+=($single)
wait_port "$TMP/front.port"
wait_port "$TMP/metrics.port"
wait_port "$TMP/single.port"
front_address="127.0.0.1:$(cat "$TMP/front.port")"

probe() { "$PY" "$CLIENT" "$TMP/gen" "$front_address" probe "$TMP/probe.tsv"; }
wait_ok() {  # seconds what
  local r
  for _ in $(seq 1 $(($1 * 5))); do
    r=$(probe)
    [ "${r%% *}" = OK ] && { echo "$r"; return 0; }
    sleep 0.2
  done
  echo "FAIL: $2: not answering within $1 s (last: $r)"
  tail -5 "$TMP/front.log" "$TMP/shard0.log" "$TMP/shard1.log"
  exit 1
}
wait_ok 60 "the sharded front end" > /dev/null || { echo "FAIL: the front end never answered"; exit 1; }
for _ in $(seq 1 100); do
  [ "$(probe | cut -d' ' -f3)" = "$latest" ] && break
  sleep 0.2
done

# serve == eval: the front end's probabilities are the one-process server's.
"$PY" "$CLIENT" "$TMP/gen" "$front_address" predict "$TMP/probe.tsv" > "$TMP/sharded.txt"
"$PY" "$CLIENT" "$TMP/gen" "127.0.0.1:$(cat "$TMP/single.port")" predict "$TMP/probe.tsv" > "$TMP/single.txt"
head -1 "$TMP/sharded.txt"
[ "$(head -1 "$TMP/sharded.txt")" = "$(head -1 "$TMP/single.txt")" ] ||
  { echo "FAIL: versions differ: $(head -1 "$TMP/single.txt") one-process"; exit 1; }
paste <(tail -n +2 "$TMP/sharded.txt") <(tail -n +2 "$TMP/single.txt") |
  awk '{ d = $1 - $2; if (d > 1e-6 || d < -1e-6) { print "FAIL: line " NR ": " $1 " vs " $2; bad = 1 } }
       END { exit bad }'
eval_logloss=$("$SAMPAN" eval "$TMP/out/versions/v-$(printf %06d "$latest")" "$TMP/probe.tsv" 2> /dev/null |
  sed -n 's/.*logloss \([^ ]*\) .*/\1/p')
served_logloss=$(cut -f1 "$TMP/probe.tsv" | paste - <(tail -n +2 "$TMP/sharded.txt") |
  awk '{ p = $2; if (p < 1e-7) p = 1e-7; if (p > 1 - 1e-7) p = 1 - 1e-7;
         s -= $1 > 0.5 ? log(p) : log(1 - p) } END { printf "%.6f", s / NR }')
echo "eval logloss $eval_logloss, sharded serving $served_logloss"
awk -v a="$eval_logloss" -v b="$served_logloss" 'BEGIN { d = a - b; exit !(d < 2e-6 && d > -2e-6) }' ||
  { echo "FAIL: sharded probabilities give another logloss than eval"; exit 1; }

# A failed call within the deadline: UNAVAILABLE, well under the client's 30 s.
expect_unavailable() {  # what
  local r
  r=$(probe)
  echo "$1: $r"
  [ "${r%% *}" = UNAVAILABLE ] || { echo "FAIL: $1: expected UNAVAILABLE, got $r"; exit 1; }
  awk -v s="$(echo "$r" | cut -d' ' -f2)" 'BEGIN { exit !(s < 3) }' ||
    { echo "FAIL: $1: the error took $(echo "$r" | cut -d' ' -f2) s (deadline 1 s)"; exit 1; }
}

kill -KILL "${shard_pid[1]}"
wait "${shard_pid[1]}" 2>/dev/null || true
expect_unavailable "shard 1 SIGKILLed"
expect_unavailable "shard 1 still down"
start_shard 1 "$port1"
r=$(wait_ok 60 "after shard 1's restart") || { echo "$r"; exit 1; }
echo "shard 1 restarted on port $port1: $r"

kill -STOP "${shard_pid[0]}"
expect_unavailable "shard 0 SIGSTOPped"
kill -CONT "${shard_pid[0]}"
r=$(wait_ok 20 "after shard 0's SIGCONT") || { echo "$r"; exit 1; }
echo "shard 0 continued: $r"

curl -sf "http://127.0.0.1:$(cat "$TMP/metrics.port")/metrics" > "$TMP/metrics.txt"
promtool check metrics < "$TMP/metrics.txt"
unavailable=$(awk '$1 == "sampan_serving_requests_total{code=\"UNAVAILABLE\"}" { print $2 }' "$TMP/metrics.txt")
[ "${unavailable:-0}" -ge 3 ] || { echo "FAIL: UNAVAILABLE calls not counted"; grep requests_total "$TMP/metrics.txt"; exit 1; }
# A lookup shard's own per-RPC metrics: calls by method and code, latency.
wait_port "$TMP/shard1.metrics"
curl -sf "http://127.0.0.1:$(cat "$TMP/shard1.metrics")/metrics" > "$TMP/shard1.txt"
promtool check metrics < "$TMP/shard1.txt"
metric() {  # file name{labels}: its value, 0 when absent
  awk -v m="$2" '$1 == m { print int($2) }' "$1" | grep . || echo 0
}
lookups=$(metric "$TMP/shard1.txt" 'sampan_serving_lookup_requests_total{code="OK",method="Lookup"}')
timed=$(metric "$TMP/shard1.txt" 'sampan_serving_lookup_request_duration_seconds_count{method="Lookup"}')
versions=$(metric "$TMP/shard1.txt" 'sampan_serving_lookup_requests_total{code="OK",method="Versions"}')
echo "shard 1 (restarted): $lookups Lookup calls OK, $timed timed, $versions Versions calls"
[ "$lookups" -ge 1 ] && [ "$timed" -ge "$lookups" ] && [ "$versions" -ge 1 ] ||
  { echo "FAIL: lookup shard 1's calls not counted"; grep sampan_serving_lookup "$TMP/shard1.txt"; exit 1; }

# A clean stop of everything started here.
for p in "${shard_pid[0]}" "${shard_pid[1]}" "$front" "$single"; do
  kill -TERM "$p"
  wait "$p" || { echo "FAIL: a server exited with $? on SIGTERM"; exit 1; }
done
trap - EXIT
echo "ok: sharded serving equals one process, survives a SIGKILLed and a SIGSTOPped shard, stops cleanly"
