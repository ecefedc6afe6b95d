#!/usr/bin/env bash
# Recovery without a person: a RocksDB-backed pserver SIGKILLed in the middle
# of `sampan run` is restarted on its port by the launcher, recovers from its
# log, the trainers' clients retry, and the job finishes with a good AUC.
set -uo pipefail

SAMPAN="${TEST_SRCDIR}/${TEST_WORKSPACE}/cli/sampan"
TMP="${TEST_TMPDIR}"
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
"$SAMPAN" run "$job.yaml" > "$TMP/run.out" 2>&1 &
launcher=$!
for _ in $(seq 1 600); do
  grep -q '^\[train\] .*[1-9][0-9]* examples' "$TMP/run.out" && break; sleep 0.1
done
victim=$(pgrep -f -- "--config=$job/job.pbtxt --index=0" | head -1)
if [ -z "$victim" ]; then echo "FAIL: pserver-0 not found"; cat "$TMP/run.out"; exit 1; fi
kill -9 "$victim"
wait $launcher; rc=$?
tail -8 "$TMP/run.out"
fail=0
[ $rc -eq 0 ] || { echo "FAIL: run exited $rc after a pserver SIGKILL"; fail=1; }
grep -qE "pserver-0 \(pid $victim\) killed by signal 9 .*; restarting it on port" "$TMP/run.out" \
  || { echo "FAIL: no restart reported"; fail=1; }
auc=$(sed -n 's/^test_auc=//p' "$job/result.txt" 2>/dev/null)
awk -v a="${auc:-0}" 'BEGIN { exit !(a > 0.70) }' \
  || { echo "FAIL: test AUC ${auc:-none} <= 0.70"; fail=1; }
[ -z "$(pgrep -f -- "--config=$job/")" ] || { echo "FAIL: processes left"; fail=1; }
[ $fail -eq 0 ] && echo "ok: pserver restarted, job finished with AUC $auc"
exit $fail
