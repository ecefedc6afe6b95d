#!/usr/bin/env bash
# Faults in a stream (data.stream with checkpoint.every_passes: 1, RocksDB
# tables, 2 pservers x 2 trainers, 8 passes of 3000 rows):
#   1. SIGKILL of a trainer mid-stream: every trainer restarts from the
#      checkpoint after the last pass (a new collective generation), the
#      job ends with every pass published once and LATEST the last.
#   2. SIGKILL of a pserver mid-stream: it restarts from its RocksDB log;
#      every pass published once, every row trained once.
#   3. SIGKILL of the whole job (the launcher and, with it, every process),
#      then `sampan run --resume`: tables back at the last pass-end
#      checkpoint, the stream goes on after that pass; no pass trained
#      twice or skipped (passes.tsv, and the examples counted over both
#      runs equal the stream's rows), every version readable.
set -uo pipefail

TESTLIB="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
[ -f "$TESTLIB" ] || TESTLIB="$(dirname "$0")/job_testlib.sh"
source "$TESTLIB"

ROWS=3000
data="$TMP/stream"
rm -rf "$data"
"$SAMPAN" gen-data --out="$data" --stream_days=2 --passes_per_day=4 \
  --parts_per_pass=2 --rows=$ROWS --seed=7 > /dev/null \
  || { fail "gen-data --stream_days"; finish; }
want="20261201/00 20261201/06 20261201/12 20261201/18 20261202/00 20261202/06 20261202/12 20261202/18 "

write_config() {  # dir
  cat > "$1.yaml" <<YAML
name: stream-fault
output_dir: $1
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 60, max_restarts: 3}
model: {type: FM, embedding_dim: 4}
table: {num_shards: 8, backend: ROCKSDB, data_dir: $1/db}
checkpoint: {every_passes: 1}
data:
  format: CRITEO_TSV
  batch_size: 256
  synthetic: {rows: 0}
  stream: {root: $data, poll_seconds: 0.2, idle_stop_seconds: 3}
YAML
}

# Waits until the job in $1 has published version $2 (or its launcher $3
# exited).
wait_version() {
  for _ in $(seq 1 600); do
    [ "$(cat "$1/versions/LATEST" 2>/dev/null)" = "$2" ] && return 0
    kill -0 "$3" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

check_stream() {  # job what
  local passes
  passes=$(tail -n +2 "$1/passes.tsv" 2>/dev/null | cut -f2 | tr '\n' ' ')
  [ "$passes" = "$want" ] && pass "$2: 8 passes published once each, in order" \
    || fail "$2: passes.tsv lists '$passes'"
  [ "$(cat "$1/versions/LATEST" 2>/dev/null)" = "v-000008" ] \
    && "$SAMPAN" eval "$1/versions/v-000006" "$data/20261202/18/part-00000" > /dev/null 2>&1 \
    && pass "$2: LATEST v-000008; a version in the middle reads" \
    || fail "$2: LATEST $(cat "$1/versions/LATEST" 2>/dev/null) or v-000006 unreadable"
  [ -z "$(leftover "$1")" ] || fail "$2: processes left: $(leftover "$1")"
}

# SIGKILLs the process matching $3 of job $1 once version $4 is out; the
# job must end well, say it restarted something ($5), and with "$6" in its
# output when given.
kill_case() {  # dir what victim-pattern version restart-word [expect]
  local job=$1 pid rc
  write_config "$job"
  "$SAMPAN" run "$job.yaml" > "$job.out" 2>&1 &
  pid=$!
  if wait_version "$job" "$4" $pid; then
    sleep 0.$((RANDOM % 4))
    pkill -9 -f -- "$3" && pass "$2: SIGKILL after $4" \
      || fail "$2: no process matched $3 to kill"
  else
    fail "$2: $4 was never published, so nothing was killed"
  fi
  wait $pid; rc=$?
  [ $rc -eq 0 ] && grep -q "$5 restart" "$job.out" \
    && { [ -z "${6:-}" ] || grep -q -- "$6" "$job.out"; } \
    && pass "$2: the stream finished ($5 restarted)" \
    || fail "$2: exit $rc: $(grep '^\[train\]' "$job.out" | tail -1) $(tail -2 "$job.out")"
  check_stream "$job" "$2"
}

# 1. A trainer: every trainer restarts from the last pass-end checkpoint.
kill_case "$TMP/trainer-kill" "trainer kill" \
  "trainer --config=$TMP/trainer-kill/.*--rank=1" v-000003 trainer
# 2. A pserver: it restarts from its log; every row trained once.
kill_case "$TMP/pserver-kill" "pserver kill" \
  "pserver --config=$TMP/pserver-kill/.*--index=0" v-000002 pserver \
  "[^0-9]$((8 * ROWS)) examples"

# 3. The whole job, then --resume.
job="$TMP/job-kill"
write_config "$job"
"$SAMPAN" run "$job.yaml" > "$job.out" 2>&1 &
pid=$!
wait_version "$job" v-000004 $pid && sleep 0.$((RANDOM % 4)) \
  || fail "job kill: v-000004 was never published before the kill"
kill -9 $pid; wait $pid 2>/dev/null
for _ in $(seq 1 50); do [ -z "$(leftover "$job")" ] && break; sleep 0.1; done
done_before=$(tail -n +2 "$job/passes.tsv" | wc -l)
[ "$done_before" -ge 4 ] && [ "$done_before" -lt 8 ] \
  && pass "killed the whole job after $done_before passes" \
  || fail "the kill came at $done_before passes"
out=$("$SAMPAN" run "$job.yaml" --resume 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "resuming from" <<< "$out" \
  && grep -q "[^0-9]$((8 * ROWS)) examples" <<< "$out" \
  && pass "--resume finished the stream; $((8 * ROWS)) examples over both runs (exactly once)" \
  || fail "--resume: exit $rc: $(grep '^\[train\]' <<< "$out" | tail -1) $(tail -3 <<< "$out")"
check_stream "$job" "--resume"

finish
