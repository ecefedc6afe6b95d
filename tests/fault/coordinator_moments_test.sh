#!/usr/bin/env bash
# Fault: SIGKILL the coordinator at the moments where it holds the most:
# during registration (members still joining), as a checkpoint round starts,
# while trainers wait at the final 'trained' barrier, and in a hybrid (DNN)
# job whose ranks met through its key-value store. Each moment is a job of
# its own; each must finish by itself with the counter exact and its AUC
# (LR: within the band of the fault-free run; hybrid: above 0.70 with the
# ranks' dense weights identical). FAULT_COORD_MOMENTS picks moments.
set -uo pipefail
CASE=coordinator_moments
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
trap cleanup_job EXIT

coordinator_log() { echo "$1/logs/coordinator.log"; }

# Ends one moment's job: waits for it, then the checks every moment shares.
check_moment() {  # job dir, moment
  wait $launcher; rc=$?
  launcher=""
  tail -3 "$1.out"
  [ $rc -eq 0 ] && pass "$2: job finished after $kills coordinator SIGKILL(s)" \
    || fail "$2: job exited $rc: $(grep -i error "$1.out" | head -3)"
  local restarts
  restarts=$(grep -c "coordinator (pid [0-9]*) killed by signal 9.*; restarting it on port" "$1.out")
  [ "$restarts" -ge 1 ] && pass "$2: $restarts coordinator restart(s)" \
    || fail "$2: no coordinator restart reported"
  check_counter "$1"
  check_leftover "$1"
  EXTRA_LINE="${EXTRA_LINE:+$EXTRA_LINE; }$2: $kills kill(s), $restarts restart(s)"
}

run_moment() {  # moment
  local job="$TMP/coord-$1"
  kills=0
  rm -rf "$job"
  write_job "$job"
  case $1 in
    registration)
      "$SAMPAN" run "$job.yaml" > "$job.out" 2>&1 &
      launcher=$!
      wait_for_line "registered PSERVER" "$job/logs/coordinator.log" || return
      kill_coordinator "$job"
      wait_for_line '^\[train\] .*[1-9][0-9]* examples' "$job.out" || return
      start_counter "$job"
      ;;
    checkpoint)
      start_job "$job" || return
      start_counter "$job"
      wait_for_line "checkpoint [0-9]+ started" "$job/logs/coordinator.log" || return
      kill_coordinator "$job"
      ;;
    final)
      start_job "$job" || return
      start_counter "$job"
      wait_for_line "barrier 'trained'" "$job"/logs/trainer-*.log || return
      kill_coordinator "$job"
      ;;
    hybrid)
      sed -i -e 's/^model: {type: LR}/model: {type: DNN, embedding_dim: 8, hidden: [32, 16],\n        dense_optimizer: {type: ADAM, learning_rate: 0.001}}/' \
        -e 's/every_seconds: 2, every_steps: 100/every_steps: 40/' \
        -e 's/epochs: 2/epochs: 1/' "$job.yaml"
      export SAMPAN_DENSE_CHECK_EVERY=5
      start_job "$job" || return
      start_counter "$job"
      for _ in $(seq 1 600); do [ "$(checkpoints_of "$job")" -ge 1 ] && break; sleep 0.1; done
      kill_coordinator "$job"
      sleep 0.5
      kill_coordinator "$job"
      ;;
  esac
  check_moment "$job" "$1"
  if [ "$1" = hybrid ]; then
    local auc hashes
    auc=$(auc_of "$job")
    awk -v a="${auc:-0}" 'BEGIN { exit !(a > 0.70) }' \
      && pass "hybrid: AUC $auc > 0.70" || fail "hybrid: AUC ${auc:-none}"
    hashes=$(sort -u "$job"/dense_hash-*.txt 2>/dev/null | wc -l)
    [ "$(ls "$job"/dense_hash-*.txt 2>/dev/null | wc -l)" -eq 2 ] && [ "$hashes" -eq 1 ] \
      && pass "hybrid: both ranks end with the same dense weights" \
      || fail "hybrid: dense weights differ between ranks ($hashes hashes)"
    unset SAMPAN_DENSE_CHECK_EVERY
  else
    check_auc "$job"
  fi
}

for moment in ${FAULT_COORD_MOMENTS:-registration checkpoint final hybrid}; do
  log "moment: $moment"
  run_moment "$moment"
  cleanup_job
done
finish
