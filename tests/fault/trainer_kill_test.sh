#!/usr/bin/env bash
# Fault (b): SIGKILL a trainer after the first complete checkpoint. The
# launcher restarts it at the data position recorded there; the job
# finishes, the counter is exact and the AUC is the fault-free one (the
# batches after the checkpoint are trained twice, which AUC tolerates).
set -uo pipefail
CASE=trainer_kill
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
trap cleanup_job EXIT

job="$TMP/trainer-kill"
write_job "$job"
start_time=$(date +%s)
start_job "$job" || finish
start_counter "$job"
kill_trainer_after_checkpoint "$job"
elapsed=$(( $(date +%s) - start_time ))
[ $rc -eq 0 ] && pass "job finished after a trainer SIGKILL" \
  || fail "job exited $rc: $(grep error "$job.out" | head -3)"
grep -qE "trainer-1 \(pid $victim\) killed by signal 9 .*; restarting it from .*/ckpt-[0-9]+" "$job.out" \
  && pass "trainer-1 restarted from a checkpoint" || fail "no trainer restart from a checkpoint reported"
resumed=$(grep -m1 "resumes from checkpoint" "$job/logs/trainer-1.log")
[ -n "$resumed" ] && pass "trainer-1 log: ${resumed#*] }" || fail "trainer-1 did not resume at a position"
EXTRA_LINE="${resumed#*] }; ${elapsed}s"
check_auc "$job"
check_counter "$job"
check_leftover "$job"
finish
