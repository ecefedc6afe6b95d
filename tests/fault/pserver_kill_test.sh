#!/usr/bin/env bash
# Fault (a): SIGKILL a pserver FAULT_KILLS (10) times at random moments
# while the job trains. The launcher restarts it on a new port, as a
# rescheduled pod gets a new address; it replays its RocksDB log and
# registers its address; the trainers' and the counter's pushes retry and
# follow the coordinator's shard map to it. The job must
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
kill_pservers_randomly "$job" "${FAULT_KILLS:-10}"
elapsed=$(( $(date +%s) - start_time ))
check_pserver_restarts "$job"
EXTRA_LINE="$kills SIGKILLs, $restarts restarts, $(checkpoints_of "$job") checkpoints kept, ${elapsed}s"
[ $rc -eq 0 ] && pass "job finished after $kills pserver SIGKILLs" \
  || fail "job exited $rc after $kills SIGKILLs: $(grep error "$job.out" | head -3)"
[ "$kills" -ge "${FAULT_KILLS:-10}" ] || fail "only $kills kills landed (job too short?)"
[ "$(checkpoints_of "$job")" -ge 1 ] || fail "no complete checkpoint"
check_auc "$job"
check_counter "$job"
check_leftover "$job"
finish
