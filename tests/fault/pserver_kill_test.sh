#!/usr/bin/env bash
# Fault (a): SIGKILL a pserver FAULT_KILLS (10) times at random moments
# while the job trains. The launcher restarts it on its port; it replays its
# RocksDB log; the trainers' and the counter's pushes retry. The job must
# finish with every acknowledged push applied once and the fault-free AUC.
set -uo pipefail
CASE=pserver_kill
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
trap cleanup_job EXIT

job="$TMP/pserver-kill"
write_job "$job"
start_time=$(date +%s)
start_job "$job" || finish
start_counter "$job"
kills=0
for _ in $(seq 1 "${FAULT_KILLS:-10}"); do
  sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.3 + 1.2 * r / 32768 }')"
  i=$((RANDOM % 2))
  victim=$(pgrep -f -- "--config=$job/job.pbtxt --index=$i " | head -1)
  [ -n "$victim" ] || continue
  kill -9 "$victim" && kills=$((kills + 1))
  log "SIGKILL pserver-$i (pid $victim), kill $kills"
done
wait $launcher; rc=$?
elapsed=$(( $(date +%s) - start_time ))
tail -4 "$job.out"
restarts=$(grep -c "restarting it on port" "$job.out")
# A kill that lands once the trainers are done gets no restart (the launcher
# says so); only the last one can.
late=$(grep -c "while the job was stopping; not restarted" "$job.out")
EXTRA_LINE="$kills SIGKILLs, $restarts restarts, $(checkpoints_of "$job") checkpoints kept, ${elapsed}s"
[ $rc -eq 0 ] && pass "job finished after $kills pserver SIGKILLs" \
  || fail "job exited $rc after $kills SIGKILLs: $(grep error "$job.out" | head -3)"
[ "$kills" -ge "${FAULT_KILLS:-10}" ] || fail "only $kills kills landed (job too short?)"
[ $((restarts + late)) -eq "$kills" ] && [ "$late" -le 1 ] ||
  fail "$restarts restarts and $late kills after the job's end for $kills kills"
[ "$(checkpoints_of "$job")" -ge 1 ] || fail "no complete checkpoint"
check_auc "$job"
check_counter "$job"
check_leftover "$job"
finish
