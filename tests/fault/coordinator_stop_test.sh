#!/usr/bin/env bash
# Fault: SIGSTOP the coordinator for FAULT_STOP_SECONDS (30) while the job
# trains, then SIGCONT it. Pulls and pushes need no coordinator, so the
# trainers go on; their heartbeats, checkpoint arrivals and final barrier
# wait for it (within cluster.wait_timeout_seconds) and carry on once it
# answers again. The job must finish with the counter exact, the fault-free
# AUC and no coordinator restart (a stopped process is not a dead one).
set -uo pipefail
CASE=coordinator_stop
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
trap 'kill -CONT ${victim:-0} 2>/dev/null; cleanup_job' EXIT

job="$TMP/coordinator-stop"
write_job "$job"
stop_for=${FAULT_STOP_SECONDS:-30}
start_time=$(date +%s)
start_job "$job" || finish
start_counter "$job"
sleep 0.5
# The final barrier needs the coordinator: the job cannot end meanwhile.
stop_for "coordinator --config=$job/job.pbtxt" coordinator "$stop_for"
wait $launcher; rc=$?
tail -4 "$job.out"
elapsed=$(( $(date +%s) - start_time ))
EXTRA_LINE="SIGSTOP ${stop_for}s, $(checkpoints_of "$job") checkpoints kept, ${elapsed}s"
[ $rc -eq 0 ] && pass "job finished after the coordinator was stopped ${stop_for}s" \
  || fail "job exited $rc: $(grep -i error "$job.out" | head -3)"
[ "$running" -eq 1 ] && pass "the job was still running when it came back" \
  || fail "the job ended while the coordinator was stopped"
grep -q "restarting it on port" "$job.out" \
  && fail "the launcher restarted a coordinator that was only stopped" \
  || pass "no restart of a stopped coordinator"
[ "$(grep -c "coordinator epoch" "$job"/logs/coordinator.log)" -eq 1 ] \
  && pass "one coordinator epoch throughout" \
  || fail "coordinator epochs: $(grep "coordinator epoch" "$job"/logs/coordinator.log)"
# The launcher says how long the job went without its coordinator.
waited=$(sed -n 's/^coordinator answering again after \([0-9.]*\)s$/\1/p' "$job.out" | sort -n | tail -1)
# (It notices on its next progress call: 0.5 s apart here.)
awk -v w="${waited:-0}" -v s="$stop_for" 'BEGIN { exit !(w >= s - 1.5 && w <= s + 5) }' \
  && pass "launcher: coordinator answering again after ${waited}s" \
  || fail "launcher reported an outage of '${waited:-none}' s for a ${stop_for}s stop"
grep -q "the coordinator did not answer [0-9]* time(s)" "$job.out" \
  && pass "summary: $(grep -o "the coordinator did not answer.*in all" "$job.out")" \
  || fail "the summary does not mention the outage"
check_auc "$job"
check_counter "$job"
check_leftover "$job"
finish
