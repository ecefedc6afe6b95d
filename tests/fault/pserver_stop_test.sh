#!/usr/bin/env bash
# Fault (c): SIGSTOP a pserver for FAULT_STOP_SECONDS (30; the Bazel target
# uses 8), then SIGCONT. Calls to it fail by deadline and are retried within
# the clients' retry budget; checkpoints meanwhile are abandoned, not hung.
set -uo pipefail
CASE=pserver_stop
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
trap 'kill -CONT ${victim:-0} 2>/dev/null; cleanup_job' EXIT

stop_seconds="${FAULT_STOP_SECONDS:-30}"
job="$TMP/pserver-stop"
write_job "$job"
start_time=$(date +%s)
start_job "$job" || finish
start_counter "$job"
sleep 1
stop_for "--config=$job/job.pbtxt --index=1 " pserver-1 "$stop_seconds"
wait $launcher; rc=$?
elapsed=$(( $(date +%s) - start_time ))
tail -4 "$job.out"
[ $rc -eq 0 ] && pass "job finished after a ${stop_seconds}s SIGSTOP" \
  || fail "job exited $rc: $(grep error "$job.out" | head -3)"
abandoned=$(grep -c "abandoned" "$job/logs/coordinator.log")
EXTRA_LINE="stopped ${stop_seconds}s, $abandoned checkpoint(s) abandoned meanwhile, $(checkpoints_of "$job") kept, ${elapsed}s"
[ "$(checkpoints_of "$job")" -ge 1 ] || fail "no complete checkpoint"
check_auc "$job"
check_counter "$job"
check_leftover "$job"
finish
