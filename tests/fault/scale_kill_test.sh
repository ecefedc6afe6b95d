#!/usr/bin/env bash
# Elastic fleet under faults: while `sampan scale` takes the fleet 2 -> 4
# and back to 2 under the counter load, SIGKILL the source of a move, the
# target of another and the coordinator in the middle of a third (each as
# the coordinator logs "fleet: moving"), and the coordinator again during
# the scale down. The launcher restarts each on a new port (the coordinator
# on its own); moves cut short are abandoned and retried. Checks: both
# rescales end, at least one move was abandoned (the kills landed mid-move),
# the counter is exact through the coordinator's map (every acknowledged
# push on the one owner of its shard), the job finishes within the AUC band.
set -uo pipefail
CASE=scale_kill
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
trap cleanup_job EXIT

job="$TMP/scale-kill"
write_job "$job"
start_time=$(date +%s)
start_job "$job" || finish
start_counter "$job"
clog="$job/logs/coordinator.log"
kills=0

moves() { grep -c "fleet: moving shard" "$clog" 2>/dev/null; }

# Waits until the coordinator has logged its n-th "moving" line; prints the
# line's source and target ("A B"), or nothing after 60 s. (12 s was not
# enough on a loaded 2-core CI machine: a killed source's restart and the
# retried move came later than that once.)
wait_move() {  # n
  for _ in $(seq 1 3000); do
    [ "$(moves)" -ge "$1" ] && break
    sleep 0.02
  done
  grep "fleet: moving shard" "$clog" | sed -n "$1p" |
    sed -E 's/.*pserver ([0-9]+) -> ([0-9]+).*/\1 \2/'
}

kill_pserver() {  # index, role
  local victim
  victim=$(pgrep -f -- "--config=$job/job.pbtxt --index=$1 " | head -1)
  [ -n "$1" ] || { fail "no move to kill the $2 of: the coordinator logged $(moves) moves"; return; }
  [ -n "$victim" ] || { fail "pserver-$1 not found"; return; }
  kill -9 "$victim" && kills=$((kills + 1))
  log "SIGKILL pserver-$1 (pid $victim), the $2 of a move"
}

scale_in_background() {  # n
  "$SAMPAN" scale "$job.yaml" --pservers="$1" --wait_seconds=150 \
    > "$job/scale-$1.out" 2>&1 &
  scale_pid=$!
}

scale_ended() {  # n
  wait $scale_pid && pass "rescale to $1 ended: $(tail -1 "$job/scale-$1.out")" ||
    fail "rescale to $1: $(tail -3 "$job/scale-$1.out")"
}

base=$(moves)
scale_in_background 4
read -r from to < <(wait_move $((base + 1)))
kill_pserver "$from" source
read -r from to < <(wait_move $((base + 3)))
kill_pserver "$to" target
wait_move $((base + 5)) > /dev/null
kill_coordinator "$job"
scale_ended 4

# The coordinator dies with a move certainly in flight: its target is
# stopped (the copy waits on it) when the SIGKILL lands, and resumed once
# the next coordinator answers; that one finds the move in its state and
# abandons it.
base=$(moves)
scale_in_background 2
read -r from to < <(wait_move $((base + 2)))
# Moves fill pserver 0 first, so the next one waits on it as well.
target_pid=$(pgrep -f -- "--config=$job/job.pbtxt --index=$to " | head -1)
kill -STOP "$target_pid"; log "SIGSTOP pserver-$to (pid $target_pid), a move's target"
sleep 0.3
kill_coordinator "$job"
kill -CONT "$target_pid"; log "SIGCONT pserver-$to"
grep -q "abandoning the move of" "$clog" &&
  pass "the restarted coordinator abandoned the move it found unfinished" ||
  fail "no 'abandoning the move of' line after the coordinator's SIGKILL mid-move"
read -r from to < <(wait_move $((base + 5)))
kill_pserver "$from" source
scale_ended 2

abandoned=$(grep -cE "fleet: move of .*abandoned|abandoning the move" "$clog")
moved=$(grep -c "fleet: moved shard" "$clog")
[ "$abandoned" -ge 1 ] && pass "$abandoned moves abandoned and retried, $moved completed" ||
  fail "no move was abandoned: the kills missed every move"
for _ in $(seq 1 600); do kill -0 $counter_pid_0 2>/dev/null || break; sleep 0.1; done
wait $counter_pid_0; crc=$?
COUNTER_LINE="$(tail -1 "$job/counter.out")"
[ $crc -eq 0 ] && pass "counter exact through the kills: $COUNTER_LINE" ||
  fail "counter rc $crc: $(tail -2 "$job/counter.out")"
wait $launcher; rc=$?
tail -3 "$job.out"
EXTRA_LINE="$kills SIGKILLs, $abandoned moves abandoned, $moved moved, $(( $(date +%s) - start_time ))s"
[ $rc -eq 0 ] && pass "job finished after $kills SIGKILLs during moves" ||
  fail "job exited $rc: $(grep error "$job.out" | head -3)"
check_auc "$job"
check_leftover "$job"
finish
