#!/usr/bin/env bash
# Early stopping on a validation slice under `sampan run`
# (data.validation_fraction, trainer/early_stop.h): every trainer stops
# after the same epoch, the first whose merged validation AUC did not rise;
# a lockstep (HYBRID) job validates every epoch and its ranks stay
# identical; a trainer SIGKILLed mid-job comes back from a checkpoint,
# repeats its epochs without deciding them again, and the job finishes.
set -uo pipefail

TESTLIB="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
[ -f "$TESTLIB" ] || TESTLIB="$(dirname "$0")/job_testlib.sh"
source "$TESTLIB"

data="$TMP/data"
"$SAMPAN" gen-data --out="$data" --rows=30000 --seed=5 --test_fraction=0.2 \
  >/dev/null || { fail "gen-data"; finish; }

write_job() {  # name model table-optimizer epochs [extra yaml]
  cat > "$TMP/$1.yaml" <<YAML
name: $1
output_dir: $TMP/$1
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 2,
          wait_timeout_seconds: 30, heartbeat_timeout_seconds: 10}
model: {$2}
table: {num_shards: 16, optimizer: {$3}}
data:
  format: CRITEO_TSV
  train_files: [$data/train.tsv]
  test_files: [$data/test.tsv]
  validation_fraction: 0.2
  epochs: $4
  batch_size: 256
  synthetic: {rows: 0}
${5:-}
YAML
}

result() { sed -n "s/^$2=//p" "$TMP/$1/result.txt" 2>/dev/null; }

# Epochs $1 (comma-separated AUCs): every one above the one before but the
# last, which is not when $2 says training stopped there (and may be either
# after the job's last epoch).
rising() {  # aucs stopped
  awk -v a="$1" -v s="$2" 'BEGIN { n = split(a, x, ",")
    for (i = 2; i < n; i++) if (x[i] <= x[i - 1]) exit 1
    if (n > 1 && s == 1 && x[n] > x[n - 1]) exit 1
    exit n < 1 }'
}

# 1. Hogwild FM with a step size far too large: the validation AUC peaks,
#    then falls; training stops there, on both trainers. Where it peaks
#    varies with the Hogwild order (epoch 6 here, 8 once on a loaded
#    machine): 14 epochs leave room for the fall.
write_job fm "type: FM, embedding_dim: 8" "type: ADAGRAD, learning_rate: 0.5" 14
out=$("$SAMPAN" run "$TMP/fm.yaml" 2>&1); rc=$?
aucs=$(result fm validation_auc); n=$(result fm epochs_trained)
stopped=$(result fm stopped_early)
if [ $rc -eq 0 ] && [ "$stopped" = 1 ] && [ "${n:-0}" -ge 2 ] && [ "$n" -lt 14 ] &&
   [ "$(tr ',' '\n' <<< "$aucs" | wc -l)" = "$n" ] && rising "$aucs" 1; then
  pass "fm: stopped early after epoch $n of 14 (validation AUC $aucs)"
else
  fail "fm: exit $rc, stopped '$stopped' after '$n' epochs, AUCs '$aucs': $(tail -3 <<< "$out")"
fi
for r in 0 1; do
  grep -q "validation AUC .* after epoch $n did not rise; stopping early ($n of 14" \
    "$TMP/fm/logs/trainer-$r.log" && pass "fm: trainer $r stopped after epoch $n" \
    || fail "fm: trainer $r did not log its stop after epoch $n"
done
grep -q "^validation AUC by epoch: .*; stopped early after epoch $n of 14" <<< "$out" \
  && pass "fm: the job summary shows the epochs" || fail "fm: no summary line: $out"
scored=$(grep -ho "scored [0-9]* validation rows after epoch 1 " "$TMP"/fm/logs/trainer-*.log \
  | awk '{ s += $2 } END { print s }')
[ "$scored" = 4800 ] && pass "fm: the ranks scored the 4800-row slice between them" \
  || fail "fm: the ranks scored $scored validation rows, not 4800"
[ -z "$(leftover "$TMP/fm")" ] || fail "fm: processes left"

# 2. HYBRID DNN: the lockstep ranks end every epoch together, validate it,
#    and end with the same dense weights.
export SAMPAN_DENSE_CHECK_EVERY=5
write_job dnn "type: DNN, embedding_dim: 8, hidden: [32, 16],
        dense_optimizer: {type: ADAM, learning_rate: 0.01}" \
  "type: ADAGRAD, learning_rate: 0.05" 3
out=$("$SAMPAN" run "$TMP/dnn.yaml" 2>&1); rc=$?
unset SAMPAN_DENSE_CHECK_EVERY
aucs=$(result dnn validation_auc); n=$(result dnn epochs_trained)
auc=$(result dnn test_auc)
if [ $rc -eq 0 ] && [ -n "$n" ] && [ "$(tr ',' '\n' <<< "$aucs" | wc -l)" = "$n" ] &&
   rising "$aucs" "$(result dnn stopped_early)" &&
   awk -v a="$auc" 'BEGIN { exit !(a > 0.65) }'; then
  pass "dnn (HYBRID): $n epochs, validation AUC $aucs, test AUC $auc"
else
  fail "dnn: exit $rc, '$n' epochs, AUCs '$aucs', test AUC '$auc': $(tail -3 <<< "$out")"
fi
hashes=$(sort -u "$TMP"/dnn/dense_hash-*.txt 2>/dev/null | wc -l)
[ "$(ls "$TMP"/dnn/dense_hash-*.txt 2>/dev/null | wc -l)" = 2 ] && [ "$hashes" = 1 ] \
  && pass "dnn: both ranks end with the same dense weights" \
  || fail "dnn: $hashes different dense hashes"

# 3. A Hogwild LR job with checkpoints, on rows enough for a few seconds of
#    training: trainer 1 is SIGKILLed after epoch 2's decision; it comes
#    back from the latest checkpoint and the job validates every epoch.
"$SAMPAN" gen-data --out="$TMP/big" --rows=240000 --seed=6 --test_fraction=0.1 \
  >/dev/null || fail "gen-data (big)"
write_job lr "type: LR" "type: ADAGRAD, learning_rate: 0.05" 5 \
  "checkpoint: {every_seconds: 0.3, timeout_seconds: 10}"
sed -i -e "s|$data/train.tsv|$TMP/big/train.tsv|" -e "s|$data/test.tsv|$TMP/big/test.tsv|" \
  -e 's/^table: {/table: {backend: ROCKSDB, /' -e 's/threads_per_trainer: 2/threads_per_trainer: 1/' \
  "$TMP/lr.yaml"
"$SAMPAN" run "$TMP/lr.yaml" > "$TMP/lr.out" 2>&1 &
launcher=$!
victim=""
for _ in $(seq 1 600); do
  if grep -q "^I.* epoch 2: validation AUC" "$TMP/lr/logs/trainer-0.log" 2>/dev/null; then
    victim=$(pgrep -f -- "trainer --config=$TMP/lr/job.pbtxt --rank=1" | head -1)
    break
  fi
  kill -0 $launcher 2>/dev/null || break
  sleep 0.05
done
[ -n "$victim" ] && kill -9 "$victim"
wait $launcher; rc=$?
aucs=$(result lr validation_auc); n=$(result lr epochs_trained)
if [ -z "$victim" ]; then
  fail "lr: no trainer 1 to kill after epoch 2 (job exit $rc): $(tail -3 "$TMP/lr.out")"
elif [ $rc -eq 0 ] && grep -q "trainer-1 (pid $victim) killed by signal 9" "$TMP/lr.out" &&
     [ "$(tr ',' '\n' <<< "$aucs" | wc -l)" = "$n" ] && [ "${n:-0}" -ge 2 ]; then
  pass "lr: trainer 1 SIGKILLed after epoch 2 came back; $n epochs validated ($aucs)"
else
  fail "lr: exit $rc, '$n' epochs, AUCs '$aucs': $(tail -4 "$TMP/lr.out")"
fi
resumed=$(grep -m1 "resumes from checkpoint" "$TMP/lr/logs/trainer-1.log")
[ -n "$resumed" ] && pass "lr: ${resumed#*] }" \
  || fail "lr: trainer 1 did not resume from a checkpoint"
[ -z "$(leftover "$TMP/lr")" ] || fail "lr: processes left"
finish
