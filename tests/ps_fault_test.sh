#!/usr/bin/env bash
# Pserver faults against the real client, with a counter table that shows
# whether any acknowledged push was lost or applied twice.
#   1. SIGKILL a RocksDB-backed pserver three times during pushes and restart
#      it on the same port: the client retries, the counters come out exact.
#   2. SIGSTOP a pserver: calls fail by deadline within the retry budget
#      instead of hanging; after SIGCONT they succeed again.
set -uo pipefail

SAMPAN="${TEST_SRCDIR}/${TEST_WORKSPACE}/cli/sampan"
LOAD="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/ps_counter_load"
TMP="${TEST_TMPDIR}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cat > "$TMP/job.yaml" <<YAML
cluster: {num_pservers: 1, num_trainers: 1}
model: {type: LR}
table:
  num_shards: 16
  backend: ROCKSDB
  durability: WAL
  data_dir: $TMP/tables
  optimizer: {type: SGD, learning_rate: 1.0}
output_dir: $TMP/out
YAML
port=$(free_port)

start_pserver() {
  "$SAMPAN" pserver --config="$TMP/job.yaml" --index=0 --port="$port" \
    >> "$TMP/pserver.log" 2>&1 &
  pserver=$!
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.05
  done
  fail "pserver did not come up on port $port"; return 1
}
trap 'kill -9 $pserver 2>/dev/null || true' EXIT

# 1. SIGKILL three times during pushes.
start_pserver
"$LOAD" --pservers="127.0.0.1:$port" --keys=2000 --rounds=300 --pause_ms=10 \
  --deadline_ms=500 --retry_ms=30000 > "$TMP/load.out" 2>&1 &
load=$!
for kill_round in 1 2 3; do
  sleep 0.7
  kill -9 $pserver; wait $pserver 2>/dev/null
  sleep 0.3
  start_pserver
done
wait $load; rc=$?
cat "$TMP/load.out"
if [ $rc -eq 0 ]; then pass "3 SIGKILLs: no acknowledged push lost or doubled"
else fail "counter load exited $rc after SIGKILLs"; fi
grep -q "push retries" "$TMP/load.out" && ! grep -q " 0 push retries" "$TMP/load.out" \
  || fail "the kills never made the client retry (did they land during pushes?)"

# 2. SIGSTOP: bounded failure, then recovery after SIGCONT.
kill -STOP $pserver
start_s=$(date +%s.%N)
"$LOAD" --pservers="127.0.0.1:$port" --keys=100 --rounds=1 --key_slot=2 \
  --deadline_ms=200 --retry_ms=1000 > "$TMP/stopped.out" 2>&1; rc=$?
elapsed=$(echo "$(date +%s.%N) - $start_s" | bc)
cat "$TMP/stopped.out"
[ $rc -eq 1 ] || fail "a call to a stopped pserver returned $rc, want failure"
grep -qE "DEADLINE|Deadline|deadline" "$TMP/stopped.out" \
  || fail "stopped pserver: failure does not name the deadline"
awk -v e="$elapsed" 'BEGIN { exit !(e < 10) }' \
  && pass "stopped pserver: failed by deadline in ${elapsed}s" \
  || fail "stopped pserver: took ${elapsed}s"
kill -CONT $pserver
"$LOAD" --pservers="127.0.0.1:$port" --keys=100 --rounds=5 --key_slot=3 \
  > "$TMP/resumed.out" 2>&1 && pass "calls succeed again after SIGCONT" \
  || { cat "$TMP/resumed.out"; fail "calls still failing after SIGCONT"; }

kill -TERM $pserver; wait $pserver
[ $failures -eq 0 ] || { echo "--- pserver log"; tail -30 "$TMP/pserver.log"; exit 1; }
echo "all checks passed"
