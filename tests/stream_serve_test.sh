#!/usr/bin/env bash
# The pipeline end to end: a stream job trains passes as their markers
# appear and publishes versions; `sampan serve` beside it follows LATEST.
# Each new pass's version answers Predict within seconds of the pass's
# marker (measured: marker -> first prediction from the version that
# includes the pass), and its probabilities give `sampan eval`'s logloss for
# that version.
set -euo pipefail

SAMPAN="${TEST_SRCDIR}/${TEST_WORKSPACE}/cli/sampan"
CLIENT="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/serving_client.py"
TMP="${TEST_TMPDIR}"
source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/python_grpc.sh"
python_stubs "$TMP/gen" serving.proto

data="$TMP/stream"
"$SAMPAN" gen-data --out="$data" --stream_days=1 --passes_per_day=4 \
  --parts_per_pass=2 --rows=3000 --seed=9 > /dev/null
for h in 12 18; do mv "$data/20261201/$h/_SUCCESS" "$TMP/marker-$h"; done
cat "$data"/20261201/18/part-* > "$TMP/probe.tsv"
cat > "$TMP/job.yaml" <<YAML
name: stream-serve
output_dir: $TMP/out
progress_interval_seconds: 1
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1}
model: {type: FM, embedding_dim: 4}
table: {num_shards: 8}
data:
  format: CRITEO_TSV
  batch_size: 256
  synthetic: {rows: 0}
  stream: {root: $data, poll_seconds: 0.2, end_pass: "20261201/18"}
serving: {poll_seconds: 0.2, max_examples_per_request: 1000}
YAML

# The server first: before anything is published it answers on its port
# but is not ready (no --ready_file: what Kubernetes' readiness checks).
mkdir -p "$TMP/out"
"$SAMPAN" serve "$TMP/job.yaml" --port_file="$TMP/port" \
  --ready_file="$TMP/ready" > "$TMP/serve.log" 2>&1 &
server=$!
trap 'kill $server ${job:-} 2>/dev/null || true; wait 2>/dev/null || true' EXIT
for _ in $(seq 1 200); do [ -s "$TMP/port" ] && break; sleep 0.05; done
address="127.0.0.1:$(cat "$TMP/port")"
sleep 0.5
[ ! -e "$TMP/ready" ] || { echo "FAIL: ready before any version exists"; exit 1; }
"$SAMPAN" run "$TMP/job.yaml" > "$TMP/run.log" 2>&1 &
job=$!

# Prints the version that answers now ("" before any).
served() {
  "$PY" "$CLIENT" "$TMP/gen" "$address" predict "$TMP/probe.tsv" 2>/dev/null |
    sed -n '1s/^version \([0-9]*\) .*/\1/p' || true
}
wait_served() {  # version seconds
  local v
  for _ in $(seq 1 $(($2 * 5))); do
    v=$(served)
    [ "$v" = "$1" ] && return 0
    sleep 0.2
  done
  echo "FAIL: version $1 not served within $2 s (serving '$v')"
  tail -5 "$TMP/serve.log" "$TMP/run.log"
  exit 1
}

wait_served 2 60
echo "ok: serving v2 while the job waits for pass 20261201/12"
# Readiness follows within a tick (200 ms) of the first version loading.
for _ in $(seq 1 50); do [ -e "$TMP/ready" ] && break; sleep 0.1; done
[ -e "$TMP/ready" ] || { echo "FAIL: no ready file 5 s after serving v2"; exit 1; }
for h in 12 18; do
  v=$([ $h = 12 ] && echo 3 || echo 4)
  mv "$TMP/marker-$h" "$data/20261201/$h/_SUCCESS"
  touch "$data/20261201/$h/_SUCCESS"
  start=$(date +%s.%N)
  wait_served $v 60
  end=$(date +%s.%N)
  echo "ok: pass 20261201/$h answered by v$v $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s after its marker"
done
wait $job || { echo "FAIL: the stream job exited $?"; tail -5 "$TMP/run.log"; exit 1; }

# The served probabilities are eval's for v4.
"$PY" "$CLIENT" "$TMP/gen" "$address" predict "$TMP/probe.tsv" > "$TMP/probs.txt"
eval_logloss=$("$SAMPAN" eval "$TMP/out/versions/v-000004" "$TMP/probe.tsv" 2> /dev/null |
  sed -n 's/.*logloss \([^ ]*\) .*/\1/p')
served_logloss=$(cut -f1 "$TMP/probe.tsv" | paste - <(tail -n +2 "$TMP/probs.txt") |
  awk '{ p = $2; if (p < 1e-7) p = 1e-7; if (p > 1 - 1e-7) p = 1 - 1e-7;
         s -= $1 > 0.5 ? log(p) : log(1 - p) } END { printf "%.6f", s / NR }')
awk -v a="$eval_logloss" -v b="$served_logloss" 'BEGIN { d = a - b; exit !(a != "" && d < 2e-6 && d > -2e-6) }' ||
  { echo "FAIL: served logloss $served_logloss, eval of v-000004 $eval_logloss"; exit 1; }
echo "ok: served v4's probabilities give eval's logloss ($eval_logloss)"
kill -TERM $server
wait $server || { echo "FAIL: serve exited $? on SIGTERM"; exit 1; }
[ ! -e "$TMP/ready" ] || { echo "FAIL: ready file left after shutdown"; exit 1; }
echo "ok: --ready_file absent before the first version and after shutdown"
trap - EXIT
