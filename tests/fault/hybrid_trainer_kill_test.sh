#!/usr/bin/env bash
# Fault (b, hybrid): SIGKILL a rank of a hybrid (DNN) job after its first
# complete checkpoint. The survivors' allreduce fails; the launcher stops
# every rank and restarts them all from that checkpoint (rank 0's dense
# weights and optimizer state, each rank's data position) as a new
# collective generation. The job must finish with bitwise identical dense
# weights on both ranks (compared every 5 steps and at the end), a test AUC
# above 0.70, exact counters and no process left.
set -uo pipefail
CASE=hybrid_trainer_kill
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
trap cleanup_job EXIT

job="$TMP/hybrid-kill"
write_job "$job"
sed -i -e 's/^model: {type: LR}/model: {type: DNN, embedding_dim: 8, hidden: [32, 16],\n        dense_optimizer: {type: ADAM, learning_rate: 0.001}}/' \
  -e 's/every_seconds: 2, every_steps: 100/every_steps: 40/' -e 's/epochs: 2/epochs: 1/' "$job.yaml"
export SAMPAN_DENSE_CHECK_EVERY=5
start_time=$(date +%s)
start_job "$job" || finish
start_counter "$job"
kill_trainer_after_checkpoint "$job"
elapsed=$(( $(date +%s) - start_time ))
[ $rc -eq 0 ] && pass "hybrid job finished after a trainer SIGKILL" \
  || fail "job exited $rc: $(grep error "$job.out" | head -3)"
regroup=$(grep -m1 "restarting all 2 trainers from .*/ckpt-[0-9]* as collective generation 1" "$job.out")
[ -n "$regroup" ] && pass "ranks regrouped: $regroup" || fail "no regroup from a checkpoint reported"
hashes=$(sort -u "$job"/dense_hash-*.txt 2>/dev/null | wc -l)
[ "$(ls "$job"/dense_hash-*.txt 2>/dev/null | wc -l)" -eq 2 ] && [ "$hashes" -eq 1 ] \
  && pass "identical dense hashes $(cat "$job/dense_hash-0.txt")" \
  || fail "dense hashes: $(cat "$job"/dense_hash-*.txt 2>/dev/null | tr '\n' ' ')"
auc=$(auc_of "$job")
awk -v a="${auc:-0}" 'BEGIN { exit !(a > 0.70) }' && pass "test AUC $auc" || fail "test AUC ${auc:-none} <= 0.70"
AUC_LINE="AUC ${auc:-none}"
EXTRA_LINE="${regroup#a hybrid trainer failed; }; ${elapsed}s"
check_counter "$job"
check_leftover "$job"
finish
