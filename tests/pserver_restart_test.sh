#!/usr/bin/env bash
# Recovery without a person: a RocksDB-backed pserver SIGKILLed in the middle
# of `sampan run` is restarted by the launcher on a new port (as a rescheduled
# pod comes back at a new address), recovers from its log, registers its new
# address, the trainers' clients retry and follow the coordinator's shard
# map to it, and the job finishes with a test AUC
# near the planted model's. Nothing acknowledged is lost: a counter workload
# pushed into the same pservers across the kill (tests/ps_counter_load) finds
# every acknowledged round applied exactly once when the pservers are
# reopened on their RocksDB directories after the job.
set -uo pipefail

source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
job="$TMP/restart"
cat > "$job.yaml" <<YAML
name: restart
output_dir: $job
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 2,
          rpc_deadline_seconds: 2}
model: {type: FM, embedding_dim: 8}
table: {num_shards: 32, backend: ROCKSDB, durability: WAL,
        optimizer: {type: ADAGRAD, learning_rate: 0.05}}
data:
  batch_size: 512
  synthetic: {rows: 600000, seed: 5, test_fraction: 0.1}
YAML
start_job "$job" || exit 1
COUNTER_ROUNDS=40 start_counter "$job"
sleep 0.5
victim=$(pgrep -f -- "--config=$job/job.pbtxt --index=0" | head -1)
if [ -z "$victim" ]; then echo "FAIL: pserver-0 not found"; cat "$job.out"; exit 1; fi
kill -9 "$victim"
wait $launcher; rc=$?
tail -8 "$job.out"
[ $rc -eq 0 ] || fail "run exited $rc after a pserver SIGKILL"
grep -qE "pserver-0 \(pid $victim\) killed by signal 9 .*; restarting it on a new port" "$job.out" \
  && pass "pserver-0 restarted on a new port" || fail "no restart reported"
# The trainers found it there: each adopted the newer map.
grep -qE "shard map version [0-9]+: pserver 0 moved from 127.0.0.1:[0-9]+ to 127.0.0.1:[0-9]+" \
  "$job"/logs/trainer-*.log && pass "trainers followed the shard map to the new port" \
  || fail "no trainer log says it followed pserver 0 to its new port"
check_counter "$job"
# FM reaches ~0.77 here against the planted ~0.837 (a restart costs none).
auc=$(sed -n 's/^test_auc=//p' "$job/result.txt" 2>/dev/null)
planted=$(sed -n 's/^planted model (the best reachable): AUC \([0-9.]*\).*/\1/p' "$job.out")
awk -v a="${auc:-0}" -v p="${planted:-1}" 'BEGIN { exit !(a >= p - 0.09) }' \
  && pass "test AUC $auc (planted $planted)" \
  || fail "test AUC ${auc:-none} more than 0.09 below the planted ${planted:-none}"
[ -z "$(pgrep -f -- "--config=$job/")" ] && pass "no process left" \
  || fail "processes left"
if [ $failures -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all checks passed"
