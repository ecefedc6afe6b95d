#!/usr/bin/env bash
# Elastic fleet: `sampan scale` takes the job's pserver fleet 2 -> 3 -> 4
# -> 2 while it trains and the counter workload pushes. Shards move live
# (coordinator/fleet.h); the launcher starts the new pservers and stops
# those that leave. Checks: every rescale ends, the counter is exact (read
# through the coordinator's map at the end, as a trainer reads: a shard
# with two owners, or a move that lost a push, shows as lost or doubled
# rounds), the job finishes within the fault-free AUC tolerance, the
# launcher stopped the pservers that left, and bad sizes are refused.
set -uo pipefail
CASE=scale
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
trap cleanup_job EXIT

job="$TMP/scale"
write_job "$job"
start_time=$(date +%s)
start_job "$job" || finish

# Refusals change nothing.
"$SAMPAN" scale "$job.yaml" --pservers=0 > "$job/scale-0.out" 2>&1; rc0=$?
"$SAMPAN" scale "$job.yaml" --pservers=33 > "$job/scale-33.out" 2>&1; rc33=$?
[ $rc0 -eq 2 ] && grep -q "must be in \[1, 32\]" "$job/scale-0.out" &&
  [ $rc33 -eq 2 ] && pass "scaling to 0 or 33 pservers (32 shards) refused" ||
  fail "bad sizes: rc $rc0 ($(cat "$job/scale-0.out")), rc $rc33"

start_counter "$job"
scales=0
for n in 3 4 2; do
  t0=$(date +%s.%N)
  if "$SAMPAN" scale "$job.yaml" --pservers=$n --wait_seconds=120 \
       > "$job/scale-$n.out" 2>&1; then
    scales=$((scales + 1))
    log "fleet at $n pservers in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s: $(tail -1 "$job/scale-$n.out")"
  else
    fail "scale to $n: $(cat "$job/scale-$n.out")"
  fi
  kill -0 $launcher 2>/dev/null || { fail "job ended before the scale to $n"; break; }
done
moved=$(grep -c "fleet: moved shard" "$job/logs/coordinator.log")
# The counter verifies itself through the coordinator's map once it has
# pushed every round: exact, or it exits 3.
for _ in $(seq 1 600); do kill -0 $counter_pid_0 2>/dev/null || break; sleep 0.1; done
wait $counter_pid_0; crc=$?
[ $crc -eq 0 ] && pass "counter exact through the rescales: $(tail -1 "$job/counter.out")" ||
  fail "counter rc $crc: $(tail -2 "$job/counter.out")"
COUNTER_LINE="$(tail -1 "$job/counter.out")"
wait $launcher; rc=$?
tail -3 "$job.out"
elapsed=$(( $(date +%s) - start_time ))
EXTRA_LINE="$scales rescales, $moved shard moves, ${elapsed}s"
[ $rc -eq 0 ] && pass "job finished after $scales rescales ($moved shard moves)" ||
  fail "job exited $rc: $(grep error "$job.out" | head -3)"
[ "$scales" -eq 3 ] || fail "only $scales of 3 rescales ended"
grep -q "fleet: stopping pserver-3" "$job.out" && grep -q "fleet: stopping pserver-2" "$job.out" ||
  fail "the launcher did not stop pservers 2 and 3 after the scale down"
check_auc "$job"
check_leftover "$job"
finish
