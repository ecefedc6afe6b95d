#!/usr/bin/env bash
# Compact rows in the distributed job (`sampan run`, 2 pservers x 2
# trainers, synthetic data, a checkpoint every 20 steps: every second
# missed them all once when a CI machine ran the job in under a second):
#   1. INT8 rows in RocksDB tables train as well as FP32 rows (test AUC
#      near the planted model's, as an FP32 job of the same config) and the
#      tables say so ('m' record, read by `sampan validate`);
#   2. the same job with FP32 rows on those tables is refused with exit 2,
#      naming the directory and both layouts, by `sampan validate` and by
#      `sampan run` before any process starts; also another embedding_dim;
#   3. `sampan run --resume` of the INT8 job restores its INT8 checkpoint and
#      finishes.
set -uo pipefail

TESTLIB="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
[ -f "$TESTLIB" ] || TESTLIB="$(dirname "$0")/job_testlib.sh"
source "$TESTLIB"

write_config() {  # name format backend
  cat > "$TMP/$1.yaml" <<YAML
name: row-format-$1
output_dir: $TMP/$1
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 60}
model: {type: FM, embedding_dim: 8}
table: {num_shards: 8, backend: $3, row_format: $2}
checkpoint: {every_steps: 20}
data: {batch_size: 512, epochs: 3, synthetic: {rows: 60000, seed: 3}}
YAML
}

auc_of() { sed -n 's/^test_auc=//p' "$TMP/$1/result.txt" 2> /dev/null; }

# 1. INT8 and FP32, the same job.
for f in INT8 FP32; do
  rm -rf "$TMP/job-$f"
  write_config "job-$f" "$f" ROCKSDB
  out=$("$SAMPAN" run "$TMP/job-$f.yaml" 2>&1)
  rc=$?
  [ $rc -eq 0 ] || fail "$f job exited $rc: $(tail -5 <<< "$out")"
  near_planted "$f rows" "$(auc_of "job-$f")" "$out" 0.08
done
int8=$(auc_of job-INT8)
fp32=$(auc_of job-FP32)
if awk -v a="$int8" -v b="$fp32" 'BEGIN { exit !(a >= b - 0.01) }'; then
  pass "INT8 AUC $int8 within 0.01 of FP32's $fp32"
else
  fail "INT8 AUC $int8 more than 0.01 below FP32's $fp32"
fi
ls -d "$TMP"/job-INT8/checkpoints/ckpt-* > /dev/null 2>&1 \
  || fail "the INT8 job wrote no checkpoint"

# 2. Other layouts on the INT8 tables: refused before anything starts.
sed 's/row_format: INT8/row_format: FP32/' "$TMP/job-INT8.yaml" > "$TMP/as-fp32.yaml"
sed 's/embedding_dim: 8/embedding_dim: 16/' "$TMP/job-INT8.yaml" > "$TMP/as-dim16.yaml"
for c in as-fp32 as-dim16; do
  out=$("$SAMPAN" validate "$TMP/$c.yaml" 2>&1)
  rc=$?
  if [ $rc -eq 2 ] && grep -q "tables/pserver-0 holds INT8 rows, dim 8, ADAGRAD" <<< "$out"; then
    pass "validate $c: exit 2, names the table and its layout"
  else
    fail "validate $c: exit $rc: $out"
  fi
done
"$SAMPAN" validate "$TMP/job-INT8.yaml" > /dev/null 2>&1 \
  || fail "validate of the INT8 job itself failed on its own tables"
rm -f "$TMP/job-INT8/logs/pserver-0.log"
out=$("$SAMPAN" run "$TMP/as-fp32.yaml" 2>&1)
rc=$?
if [ $rc -eq 2 ] && grep -q "configured for FP32 rows" <<< "$out" &&
   ! grep -q "pid" <<< "$out" && [ ! -f "$TMP/job-INT8/logs/pserver-0.log" ]; then
  pass "run with FP32 rows on INT8 tables: exit 2, no process started"
else
  fail "run with FP32 rows on INT8 tables: exit $rc: $(head -5 <<< "$out")"
fi

# 3. Resume the INT8 job from its checkpoint.
out=$("$SAMPAN" run "$TMP/job-INT8.yaml" --resume 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "resuming from" <<< "$out"; then
  pass "INT8 job resumed from its checkpoint (AUC $(auc_of job-INT8))"
else
  fail "INT8 resume: exit $rc: $(tail -5 <<< "$out")"
fi

[ -z "$(leftover "$TMP/job-INT8")$(leftover "$TMP/job-FP32")" ] \
  || fail "processes left behind"
finish
