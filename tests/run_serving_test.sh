#!/usr/bin/env bash
# `sampan run` serving beside a stream job (serving.enabled), as a new user
# meets it: the run prints where predictions are served, `sampan predict`
# scores a file through it, the answers change as passes are trained (each
# response names its version), a SIGKILLed server is restarted on its port
# by the launcher and answers again, `--version` of an old version is
# refused naming the address and lines, and the server stops with the job.
set -uo pipefail

SAMPAN="${TEST_SRCDIR}/${TEST_WORKSPACE}/cli/sampan"
TMP="${TEST_TMPDIR}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

data="$TMP/stream"
"$SAMPAN" gen-data --out="$data" --stream_days=1 --passes_per_day=4 \
  --parts_per_pass=1 --rows=3000 --seed=5 > /dev/null
for h in 12 18; do mv "$data/20261201/$h/_SUCCESS" "$TMP/marker-$h"; done
head -200 "$data/20261201/18/part-00000" > "$TMP/probe.tsv"
out="$TMP/out"
cat > "$TMP/job.yaml" <<YAML
name: run-serving
output_dir: $out
progress_interval_seconds: 1
cluster: {num_pservers: 2, num_trainers: 1, threads_per_trainer: 1,
          max_restarts: 2}
model: {type: FM, embedding_dim: 4}
table: {num_shards: 8}
data:
  format: CRITEO_TSV
  batch_size: 256
  synthetic: {rows: 0}
  stream: {root: $data, poll_seconds: 0.2, end_pass: "20261201/18"}
serving: {enabled: true, poll_seconds: 0.2}
YAML

"$SAMPAN" run "$TMP/job.yaml" > "$TMP/run.log" 2>&1 &
job=$!
trap 'kill $job 2>/dev/null; wait 2>/dev/null' EXIT

# Prints the version of the first answer for the probe ("" while none).
served() {
  "$SAMPAN" predict "$TMP/job.yaml" "$TMP/probe.tsv" 2>/dev/null |
    sed -n '1s/^[0-9.]*\t\([0-9]*\)$/\1/p'
}
wait_served() {  # version seconds
  local v=""
  for _ in $(seq 1 $(($2 * 5))); do
    v=$(served)
    [ "$v" = "$1" ] && return 0
    sleep 0.2
  done
  echo "FAIL: version $1 not served within $2 s (serving '$v')"
  tail -5 "$out/logs/serve.log"; tr '\r' '\n' < "$TMP/run.log" | tail -5
  exit 1
}

wait_served 2 60
grep -q "serving predictions on 127.0.0.1:" "$TMP/run.log" \
  && pass "run says where predictions are served" \
  || fail "no serving address in the run's output"
"$SAMPAN" predict "$TMP/job.yaml" "$TMP/probe.tsv" --batch=64 \
  > "$TMP/v2.tsv" 2> "$TMP/v2.err"
n=$(wc -l < "$TMP/v2.tsv")
bad=$(awk -F'\t' '$1 <= 0 || $1 >= 1 || $2 != 2' "$TMP/v2.tsv" | wc -l)
[ "$n" = 200 ] && [ "$bad" = 0 ] && grep -q "200 by v-000002" "$TMP/v2.err" \
  && pass "200 probabilities in (0, 1), all by v-000002" \
  || fail "predict: $n lines, $bad bad; $(cat "$TMP/v2.err")"

# The launcher brings a killed server back on its port.
victim=$(pgrep -f -- "serve $out/job.pbtxt" | head -1)
[ -n "$victim" ] || fail "no serve process found"
kill -9 "$victim"
wait_served 2 30
grep -q "serve (pid $victim) killed by signal 9.*; restarting it on port" \
  "$TMP/run.log" && pass "killed server restarted on its port, serves v2 again" \
  || fail "no restart of the server in the run's output"

# A new pass changes the answers; they name the new version.
mv "$TMP/marker-12" "$data/20261201/12/_SUCCESS"
wait_served 3 60
"$SAMPAN" predict "$TMP/job.yaml" "$TMP/probe.tsv" > "$TMP/v3.tsv" 2> /dev/null
changed=$(paste "$TMP/v2.tsv" "$TMP/v3.tsv" | awk -F'\t' '$1 != $3' | wc -l)
[ "$changed" -gt 100 ] && pass "$changed of 200 probabilities changed with v3" \
  || fail "only $changed of 200 probabilities changed from v2 to v3"
err=$("$SAMPAN" predict "$TMP/job.yaml" "$TMP/probe.tsv" --version=2 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "Predict at 127.0.0.1:[0-9]* for .*probe.tsv lines 1-100" <<< "$err" \
  && pass "--version=2 refused: $(tail -1 <<< "$err" | cut -c1-160)" \
  || fail "--version=2: rc $rc: $err"

# The last pass ends the job; the server stops with it.
mv "$TMP/marker-18" "$data/20261201/18/_SUCCESS"
for _ in $(seq 1 300); do kill -0 $job 2>/dev/null || break; sleep 0.2; done
wait $job; rc=$?
[ $rc -eq 0 ] && pass "job ended at end_pass" || fail "job exit $rc"
grep -q "^1 serving restart(s) during the job" "$TMP/run.log" \
  && pass "the summary counts the serving restart" \
  || fail "no serving restart in the summary"
pgrep -f -- "serve $out/job.pbtxt" > /dev/null \
  && fail "the server outlived the job" || pass "the server stopped with the job"
"$SAMPAN" predict "$TMP/job.yaml" "$TMP/probe.tsv" > /dev/null 2>&1 \
  && fail "predict succeeded after the job ended" \
  || pass "predict fails once serving stopped"

if [ $failures -gt 0 ]; then
  tr '\r' '\n' < "$TMP/run.log" | tail -20
  echo "$failures check(s) failed"; exit 1
fi
echo "all checks passed"
