#!/usr/bin/env bash
# A coordinator that was only stopped, and replaced meanwhile, must not act
# when it wakes up (common/coordinator_epoch.h). Real processes on one port:
# coordinator A serves a launch; A is SIGSTOPped; B starts with the same
# launch id on the same port (gRPC binds with SO_REUSEPORT, as a replacement
# pod takes the same Service) and writes the launch's state with its newer
# epoch; A gets SIGCONT and must exit by itself (status 3) within a few
# seconds, having written nothing; B answers for the job afterwards.
set -euo pipefail
SAMPAN="${TEST_SRCDIR}/${TEST_WORKSPACE}/cli/sampan"
TMP="${TEST_TMPDIR}"
cat > "$TMP/job.yaml" <<YAML
name: fence
output_dir: $TMP/out
cluster: {num_pservers: 1, num_trainers: 1}
YAML
pids=""
trap 'kill -CONT $pids 2> /dev/null || true; kill -9 $pids 2> /dev/null || true' EXIT
wait_file() { for _ in $(seq 1 200); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }

"$SAMPAN" coordinator --config="$TMP/job.yaml" --launch_id=L --port=0 \
  --port_file="$TMP/a.port" > "$TMP/a.log" 2>&1 &
a=$!; pids="$a"
wait_file "$TMP/a.port" || { echo "FAIL: A did not start"; cat "$TMP/a.log"; exit 1; }
port=$(cat "$TMP/a.port")
kill -STOP $a
"$SAMPAN" coordinator --config="$TMP/job.yaml" --launch_id=L --port="$port" \
  --port_file="$TMP/b.port" > "$TMP/b.log" 2>&1 &
b=$!; pids="$a $b"
wait_file "$TMP/b.port" || { echo "FAIL: B did not start on A's port"; cat "$TMP/b.log"; exit 1; }
[ "$(cat "$TMP/b.port")" = "$port" ] || { echo "FAIL: B on another port"; exit 1; }
grep -q "coordinator incarnation 2" "$TMP/b.log" ||
  { echo "FAIL: B did not resume the launch"; cat "$TMP/b.log"; exit 1; }
echo "ok: B took over port $port as incarnation 2"

kill -CONT $a
for _ in $(seq 1 100); do kill -0 $a 2> /dev/null || break; sleep 0.05; done
if kill -0 $a 2> /dev/null; then echo "FAIL: A still runs 5 s after SIGCONT"; exit 1; fi
rc=0; wait $a || rc=$?
[ $rc -eq 3 ] || { echo "FAIL: A exited $rc, want 3"; cat "$TMP/a.log"; exit 1; }
grep -q "superseded: .*state.pb was written by coordinator epoch" "$TMP/a.log" ||
  { echo "FAIL: A did not say why it stopped"; cat "$TMP/a.log"; exit 1; }
echo "ok: A woke up, found B's newer epoch and exited 3: $(grep -o 'superseded: .*' "$TMP/a.log" | head -1 | cut -c1-80)..."

# B still answers for the job, and the state is B's.
out=$("$SAMPAN" status "$TMP/job.yaml" --coordinator="127.0.0.1:$port" 2>&1) ||
  { echo "FAIL: status through B: $out"; exit 1; }
epoch_b=$(sed -n 's/.*coordinator epoch \([0-9]*\)$/\1/p' "$TMP/b.log" | head -1)
grep -q "coordinator: restarted 1 time(s); this one (epoch $epoch_b)" <<< "$out" ||
  { echo "FAIL: status does not show B (epoch $epoch_b): $out"; exit 1; }
kill -0 $b || { echo "FAIL: B died"; exit 1; }
echo "ok: B (epoch $epoch_b) answers sampan status after A is gone"
kill -TERM $b; wait $b || true
echo "PASS"
