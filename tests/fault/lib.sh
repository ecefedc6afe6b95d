# Shared by the fault cases (tests/fault/*_test.sh); source after
# `set -uo pipefail`. Each case runs a small LR job (FAULT_MODEL: another)
# under `sampan run` with a RocksDB table and checkpoints, injects its
# fault, and checks:
#   - the job finishes, or fails naming the reason while leaving a complete
#     checkpoint that `sampan run --resume` finishes from;
#   - a counter workload pushed into the same pservers during the fault
#     (tests/ps_counter_load --config: every acknowledged round applied
#     exactly once, read back from the pservers reopened on their RocksDB
#     directories after the job);
#   - the test AUC is within FAULT_AUC_TOLERANCE (0.003) of a fault-free run
#     of the same job on the same data (computed once per binary and cached
#     in $FAULT_CACHE);
#   - no process of the job is left.
# LR rather than FM: asynchronous FM training moves the test AUC by up to
# 0.005 from run to run (push merging and interleaving vary), LR by 0.0002,
# so only LR lets a 0.003 bound say something about the fault.
# The Bazel targets shorten the waits (FAULT_STOP_SECONDS,
# FAULT_LOSS_SECONDS) or lengthen the job (FAULT_EPOCHS, 2; its fault-free
# AUC is computed for it) per case: tests/fault/BUILD.bazel.

RUNFILES="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-}"
if [ -n "${TEST_SRCDIR:-}" ] && [ -x "$RUNFILES/cli/sampan" ]; then
  SAMPAN="$RUNFILES/cli/sampan"
  LOAD="$RUNFILES/tests/ps_counter_load"
else
  ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  SAMPAN="${SAMPAN:-$ROOT/bazel-bin/cli/sampan}"
  LOAD="${LOAD:-$ROOT/bazel-bin/tests/ps_counter_load}"
fi
TMP="${TEST_TMPDIR:-$(mktemp -d /tmp/sampan-fault.XXXXXX)}"
FAULT_CACHE="${FAULT_CACHE:-/tmp/sampan-fault-cache}"
FAULT_ROWS="${FAULT_ROWS:-200000}"
FAULT_EPOCHS="${FAULT_EPOCHS:-2}"
FAULT_AUC_TOLERANCE="${FAULT_AUC_TOLERANCE:-0.003}"
# The job's model (a case may train another; the baseline is per model).
FAULT_MODEL="${FAULT_MODEL:-{type: LR\}}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
# A case that cannot run here says why and passes; tests/skipped.sh lists
# it after the run and fails a run that allows no such skip (CI).
skip() { echo "SKIP: $*"; exit 0; }
log() { echo "[$(date +%T)] $*"; }

require_root() {  # what the case needs root for
  [ "$(id -u)" -eq 0 ] || skip "$1 needs root (uid $(id -u))"
}

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Shared synthetic data, generated once per FAULT_ROWS.
data_dir() {
  local d="$FAULT_CACHE/data-$FAULT_ROWS"
  mkdir -p "$FAULT_CACHE"
  (
    flock 9
    [ -s "$d/test.tsv" ] || "$SAMPAN" gen-data --out="$d" --rows="$FAULT_ROWS" \
      --seed=11 --test_fraction=0.1 > /dev/null
  ) 9> "$FAULT_CACHE/data.lock"
  echo "$d"
}

write_job() {  # dir [extra yaml]
  local data slice=""; data=$(data_dir)
  # A job lengthened for room (FAULT_EPOCHS > 2), or one that must write
  # all its rows (FAULT_VALIDATION=0: disk_full fills a disk), trains every
  # epoch; a 2-epoch one stops early on a validation slice, as jobs do by
  # default.
  [ "$FAULT_EPOCHS" -le 2 ] || slice="validation_fraction: 0"
  [ -z "${FAULT_VALIDATION:-}" ] || slice="validation_fraction: $FAULT_VALIDATION"
  cat > "$1.yaml" <<YAML
name: fault
output_dir: $1
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          rpc_deadline_seconds: 2, wait_timeout_seconds: 90,
          heartbeat_timeout_seconds: 60, max_restarts: 10}
model: $FAULT_MODEL
table: {num_shards: 32, backend: ROCKSDB, durability: WAL,
        optimizer: {type: ADAGRAD, learning_rate: 0.05}}
data:
  batch_size: 512
  epochs: $FAULT_EPOCHS
  $slice
  # Trainers resume inside a shuffle window: re-read, same order, skipped.
  shuffle_buffer_rows: 4096
  synthetic: {rows: 0}
  train_files: [$data/train.tsv]
  test_files: [$data/test.tsv]
# every_steps too: an idle machine trains the job (~350 steps a trainer) in
# about 2 s, before the first timed checkpoint (trainer_kill_test failed so).
checkpoint: {every_seconds: 2, every_steps: 100, keep: 3, timeout_seconds: 30}
${2:-}
YAML
}

# Starts `sampan run` on $1.yaml in the background (pid in $launcher) and
# waits until trainers report examples.
start_job() {
  "$SAMPAN" run "$1.yaml" ${2:-} > "$1.out" 2>&1 &
  launcher=$!
  for _ in $(seq 1 600); do
    grep -qE '^\[train\] .*[1-9][0-9]* examples' "$1.out" 2>/dev/null && return 0
    kill -0 $launcher 2>/dev/null || break
    sleep 0.1
  done
  fail "job $1 did not start training"; cat "$1.out"; return 1
}

coordinator_address() {  # job dir -> "127.0.0.1:P"
  for _ in $(seq 1 100); do [ -s "$1/coordinator.port" ] && break; sleep 0.05; done
  echo "127.0.0.1:$(cat "$1/coordinator.port")"
}

# The counter workload against the job's pservers, in the background; the
# optional table id counts in that table (1: an ASYNC deep job's dense one).
# It finds the pservers through the job's coordinator and follows its shard
# map, as the trainers do: a restarted pserver comes back on a new port.
start_counter() {  # job dir [table id]
  local t=${2:-0} sfx=""
  [ "$t" -eq 0 ] || sfx="-t$t"
  "$LOAD" --config="$1.yaml" --table_id="$t" --coordinator="$(coordinator_address "$1")" \
    --keys=200 --rounds="${COUNTER_ROUNDS:-150}" --pause_ms=20 --key_slot=77 \
    --deadline_ms=2000 --retry_ms=60000 --out="$1/counter$sfx.acked" \
    > "$1/counter$sfx.out" 2>&1 &
  eval "counter_pid_$t=$!"
  # The fault comes after the counter's first acknowledged round, not while
  # it is still starting: on a loaded machine a short job could otherwise
  # end (or lose its coordinator) before the counter found its pservers.
  local pid=$! acked=0
  for _ in $(seq 1 300); do
    read -r _ acked _ < "$1/counter$sfx.acked" 2>/dev/null || acked=0
    [ "${acked:-0}" -ge 1 ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  log "counter$sfx: no acknowledged round yet ($(tail -1 "$1/counter$sfx.out" 2>/dev/null))"
}

# Waits for the counter workload of the table (killing it if the job is
# over), then reopens each pserver's RocksDB directory and checks every
# counter.
check_counter() {  # job dir [table id]
  local t=${2:-0} sfx="" rc=0 acked in_doubt pid
  [ "$t" -eq 0 ] || sfx="-t$t"
  pid=$(eval echo "\$counter_pid_$t")
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null
  wait "$pid"; rc=$?
  read -r _ acked _ in_doubt < "$1/counter$sfx.acked" 2>/dev/null || { acked=0; in_doubt=1; }
  [ $rc -eq 0 ] || in_doubt=1
  local ports="" pids="" i p
  for i in 0 1; do
    p=$(free_port)
    "$SAMPAN" pserver --config="$1/job.pbtxt" --index=$i --port=$p \
      >> "$1/verify-pserver-$i.log" 2>&1 &
    pids="$pids $!"; ports="$ports${ports:+,}127.0.0.1:$p"
  done
  "$LOAD" --config="$1.yaml" --table_id="$t" --pservers="$ports" --keys=200 \
    --key_slot=77 --verify=1 --acked="$acked" --in_doubt="$in_doubt" \
    --retry_ms=20000 > "$1/counter$sfx.verify" 2>&1
  rc=$?
  kill -TERM $pids 2>/dev/null; wait $pids 2>/dev/null
  local line; line="$(cat "$1/counter$sfx.verify")"
  [ "$t" -eq 0 ] || line="table $t: $line"
  COUNTER_LINE="${COUNTER_LINE:+$COUNTER_LINE; }$line"
  if [ $rc -eq 0 ] && [ "$acked" -gt 0 ]; then
    pass "counter: $line"
  else
    fail "counter (rc $rc, load: $(tail -1 "$1/counter$sfx.out")): $line"
  fi
}

# SIGKILLs a random pserver of the job $2 times, 0.3-1.5 s apart; the count
# that landed is in $kills. Then waits for the launcher ($rc).
kill_pservers_randomly() {  # job dir, kills
  kills=0
  local i victim
  for _ in $(seq 1 "$2"); do
    sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.3 + 1.2 * r / 32768 }')"
    i=$((RANDOM % 2))
    victim=$(pgrep -f -- "--config=$1/job.pbtxt --index=$i " | head -1)
    [ -n "$victim" ] || continue
    kill -9 "$victim" && kills=$((kills + 1))
    log "SIGKILL pserver-$i (pid $victim), kill $kills"
  done
  wait $launcher; rc=$?
  tail -4 "$1.out"
}

# Every kill got a restart, but for one that landed once the trainers were
# done (the launcher says so). Sets $restarts.
check_pserver_restarts() {  # job dir
  restarts=$(grep -c "restarting it on a new port" "$1.out")
  local late; late=$(grep -c "while the job was stopping; not restarted" "$1.out")
  [ $((restarts + late)) -eq "$kills" ] && [ "$late" -le 1 ] ||
    fail "$restarts restarts and $late kills after the job's end for $kills kills"
}

auc_of() { sed -n 's/^test_auc=//p' "$1/result.txt" 2>/dev/null; }

# The fault-free AUC of this job, cached per binary.
baseline_auc() {
  local key
  key=$( (cat "$SAMPAN" "${BASH_SOURCE[0]}"; echo "$FAULT_MODEL") | sha1sum | cut -c1-12)-$FAULT_ROWS-$FAULT_EPOCHS
  local cached="$FAULT_CACHE/baseline-$key.auc"
  (
    flock 8
    if [ ! -s "$cached" ]; then
      local job="$FAULT_CACHE/baseline-$key"
      rm -rf "$job"; write_job "$job"
      "$SAMPAN" run "$job.yaml" > "$job.out" 2>&1 && auc_of "$job" > "$cached"
      rm -rf "$job"  # tables and checkpoints; the AUC and the log stay
    fi
  ) 8> "$FAULT_CACHE/baseline.lock"
  cat "$cached" 2>/dev/null
}

check_auc() {  # job dir
  local auc base
  auc=$(auc_of "$1"); base=$(baseline_auc)
  [ -n "$base" ] || { fail "no baseline AUC (fault-free run failed)"; return; }
  AUC_LINE="AUC ${auc:-none} vs fault-free $base"
  if awk -v a="${auc:-0}" -v b="$base" -v t="$FAULT_AUC_TOLERANCE" \
       'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; then
    pass "$AUC_LINE (within $FAULT_AUC_TOLERANCE)"
  else
    fail "$AUC_LINE (tolerance $FAULT_AUC_TOLERANCE)"
  fi
}

# SIGKILLs trainer 1 once the job has a complete checkpoint (pid in
# $victim), waits for the launcher ($rc) and shows the end of its output.
kill_trainer_after_checkpoint() {  # job dir
  for _ in $(seq 1 600); do [ "$(checkpoints_of "$1")" -ge 1 ] && break; sleep 0.1; done
  if [ "$(checkpoints_of "$1")" -lt 1 ]; then
    fail "no checkpoint within 60 s"
    # What the job said of its checkpoints, so the failure can be read.
    tail -8 "$1.out"
    grep -ih "checkpoint" "$1"/logs/*.log 2>/dev/null | tail -12
  fi
  sleep 0.5
  victim=$(pgrep -f -- "--config=$1/job.pbtxt --rank=1 " | head -1)
  [ -n "$victim" ] || { fail "trainer-1 not found"; finish; }
  kill -9 "$victim"; log "SIGKILL trainer-1 (pid $victim)"
  wait $launcher; rc=$?
  tail -4 "$1.out"
}

# SIGKILLs the job's coordinator (counted in $kills) and waits until the
# launcher's replacement answers on its port (a kill of a coordinator still
# starting is a case of its own).
kill_coordinator() {  # job dir
  local victim next address
  address=$(coordinator_address "$1")
  victim=$(pgrep -f -- "coordinator --config=$1/job.pbtxt" | head -1)
  [ -n "$victim" ] || return 1
  kill -9 "$victim" && kills=$((${kills:-0} + 1))
  log "SIGKILL coordinator (pid $victim), kill $kills"
  for _ in $(seq 1 200); do
    next=$(pgrep -f -- "coordinator --config=$1/job.pbtxt" | head -1)
    if [ -n "$next" ] && [ "$next" != "$victim" ] &&
       (exec 3<> "/dev/tcp/${address%:*}/${address##*:}") 2> /dev/null; then
      return 0
    fi
    kill -0 $launcher 2> /dev/null || return 0
    sleep 0.025
  done
}

# Waits up to 60 s for `pattern` in the files `glob` names; fails if absent.
wait_for_line() {  # pattern glob...
  local pattern=$1; shift
  for _ in $(seq 1 600); do
    grep -qE -- "$pattern" "$@" 2> /dev/null && return 0
    sleep 0.1
  done
  fail "no line '$pattern' in $* within 60 s"
  return 1
}

# SIGSTOPs the process `pattern` matches (pid in $victim) for `seconds`,
# then SIGCONTs it; $running says whether the job was still running then.
stop_for() {  # pattern name seconds
  victim=$(pgrep -f -- "$1" | head -1)
  [ -n "$victim" ] || { fail "$2 not found"; finish; }
  kill -STOP "$victim"; log "SIGSTOP $2 (pid $victim) for ${3}s"
  sleep "$3"
  kill -0 $launcher 2> /dev/null && running=1 || running=0
  kill -CONT "$victim"; log "SIGCONT $2 (pid $victim)"
}

checkpoints_of() { ls -d "$1"/checkpoints/ckpt-*/MANIFEST 2>/dev/null | wc -l; }

check_leftover() {
  for _ in $(seq 1 50); do [ -z "$(pgrep -f -- "--config=$1/")" ] && break; sleep 0.1; done
  [ -z "$(pgrep -f -- "--config=$1/")" ] || fail "processes left: $(pgrep -f -- "--config=$1/" | tr '\n' ' ')"
}

cleanup_job() {
  [ -n "${launcher:-}" ] && kill -TERM $launcher 2>/dev/null
  local t
  for t in 0 1; do eval "[ -n \"\${counter_pid_$t:-}\" ] && kill -9 \$counter_pid_$t 2>/dev/null"; done
  wait 2>/dev/null
}

finish() {
  echo "RESULT ${CASE:-case}: failures=$failures ${AUC_LINE:-} | ${COUNTER_LINE:-} | ${EXTRA_LINE:-}"
  if [ $failures -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}
