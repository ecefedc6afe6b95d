#!/usr/bin/env bash
# Fault: SIGKILL the coordinator FAULT_COORD_KILLS (3) times while the job
# trains and takes checkpoints. The launcher restarts it on its port with the
# same launch id; pservers and trainers keep pulling and pushing meanwhile
# (that needs no coordinator), re-register when their heartbeat finds it has
# forgotten them, and retry their barrier and key-value calls; a checkpoint
# round it was running is abandoned and a later one completes. The job must
# finish with every acknowledged push applied once and the fault-free AUC.
set -uo pipefail
CASE=coordinator_kill
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
trap cleanup_job EXIT

job="$TMP/coordinator-kill"
write_job "$job"
start_time=$(date +%s)
start_job "$job" || finish
start_counter "$job"
kills=0
# Kills follow each other quickly: a coordinator restart costs the trainers
# little, and on an idle machine the job trains for only ~3 s.
for _ in $(seq 1 "${FAULT_COORD_KILLS:-3}"); do
  sleep "$(awk -v r=$RANDOM 'BEGIN { printf "%.2f", 0.2 + 0.4 * r / 32768 }')"
  kill_coordinator "$job"
done
wait $launcher; rc=$?
tail -4 "$job.out"
elapsed=$(( $(date +%s) - start_time ))
restarts=$(grep -c "coordinator (pid [0-9]*) killed by signal 9.*; restarting it on port" "$job.out")
late=$(grep -c "coordinator .* while the job was stopping; not restarted" "$job.out")
EXTRA_LINE="$kills SIGKILLs, $restarts restarts, $(checkpoints_of "$job") checkpoints kept, ${elapsed}s"
[ $rc -eq 0 ] && pass "job finished after $kills coordinator SIGKILLs" \
  || fail "job exited $rc after $kills SIGKILLs: $(grep error "$job.out" | head -3)"
[ "$kills" -ge "${FAULT_COORD_KILLS:-3}" ] || fail "only $kills kills landed (job too short?)"
[ $((restarts + late)) -eq "$kills" ] && [ "$restarts" -ge 1 ] \
  && pass "$restarts coordinator restarts on its port" \
  || fail "$restarts restarts (+$late late) for $kills kills"
# Every incarnation ran as the same launch (and so would resume its state).
launches=$(grep -o "launch [0-9-]*:" "$job"/logs/coordinator.log | sort | uniq -c)
[ "$(wc -l <<< "$launches")" -eq 1 ] && [ "$(awk '{print $1}' <<< "$launches")" -ge $((restarts + 1)) ] \
  && pass "$((restarts + 1)) coordinator incarnations of one launch" \
  || fail "coordinator incarnations by launch: $launches"
outage=$(grep -o "the coordinator did not answer.*in all" "$job.out")
[ -n "$outage" ] && pass "summary: $outage" || fail "the summary does not mention the outages"
grep -q "registering again" "$job"/logs/trainer-*.log \
  && pass "trainers registered again with the new coordinator" \
  || fail "no trainer registered again"
[ "$(checkpoints_of "$job")" -ge 1 ] || fail "no complete checkpoint"
check_auc "$job"
check_counter "$job"
check_leftover "$job"
finish
