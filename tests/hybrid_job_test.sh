#!/usr/bin/env bash
# End-to-end suite for hybrid training (`sampan run` with a deep model):
# sparse rows asynchronous on the pservers, dense weights averaged by
# allreduce every step (trainer/hybrid_dense.h).
#   1. DeepFM, 2 trainers x 2 pservers, hashes compared every 5 steps:
#      exit 0, test AUC within 0.08 of the planted model's, both ranks' final dense-weight hashes
#      (<output_dir>/dense_hash-<rank>.txt) bitwise identical, same step count;
#   1b. DeepFM with 2 threads per rank: lockstep steps of two batches,
#      identical hashes, half the steps;
#   2. DCN-v2 with 3 trainers (the average is not a power-of-two division):
#      exit 0 and three identical hashes;
#   3. a rank whose weights were nudged after the broadcast
#      (SAMPAN_DENSE_TEST_SKEW_RANK) fails the job at the first hash check,
#      on every rank, leaving no process;
#   4. model.dense_device: GPU trains with identical hashes where a GPU is
#      usable and fails naming the reason where none is (CI).
#   5. with TLS and a bearer token on every channel (cluster.security), the
#      collective's rendezvous through the coordinator uses them too: the
#      job trains, and the coordinator refused no call;
#   6. time-triggered checkpoints in lockstep: the coordinator announces a
#      step ahead of the ranks, both pause at it, rank 0's dense state lands
#      in the checkpoint, and the job finishes with identical hashes;
#   7. bad data (malformed rows over data.max_bad_fraction) stops the job
#      at once: the trainer exits 3, and the ranks are not regrouped to meet
#      the same rows again.
set -uo pipefail

TESTLIB="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
[ -f "$TESTLIB" ] || TESTLIB="$(dirname "$0")/job_testlib.sh"
source "$TESTLIB"

write_config() {  # dir trainers model-yaml rows [threads per trainer]
  cat > "$1.yaml" <<YAML
name: hybrid
output_dir: $1
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: $2, threads_per_trainer: ${5:-1},
          wait_timeout_seconds: 30, heartbeat_timeout_seconds: 10}
model: {$3, embedding_dim: 8, hidden: [32, 16],
        dense_optimizer: {type: ADAM, learning_rate: 0.001}}
table: {num_shards: 32, optimizer: {type: ADAGRAD, learning_rate: 0.05}}
data:
  batch_size: 1024
  synthetic: {rows: $4, seed: 3, test_fraction: 0.1}
YAML
}

# Prints the distinct hashes of the job's ranks; fails unless all $2 exist.
same_hashes() {  # dir trainers
  local n
  n=$(cat "$1"/dense_hash-*.txt 2>/dev/null | grep -c '^[0-9a-f]\{16\}$')
  [ "$n" -eq "$2" ] || { echo "only $n of $2 hash files"; return 1; }
  [ "$(sort -u "$1"/dense_hash-*.txt | wc -l)" -eq 1 ] \
    || { echo "hashes differ: $(cat "$1"/dense_hash-*.txt | tr '\n' ' ')"; return 1; }
}

# 1. DeepFM, 2 trainers.
job="$TMP/deepfm"
write_config "$job" 2 "type: DEEPFM" 200000
out=$(SAMPAN_DENSE_CHECK_EVERY=5 "$SAMPAN" run "$job.yaml" 2>&1); rc=$?
echo "$out" | tail -4
auc=$(sed -n 's/^test_auc=//p' "$job/result.txt" 2>/dev/null)
# DeepFM reaches ~0.789 here against the planted 0.847.
[ $rc -eq 0 ] || fail "deepfm: run exited $rc"
near_planted "deepfm" "$auc" "$out" 0.08
why=$(same_hashes "$job" 2) && pass "deepfm: identical dense hashes $(cat "$job/dense_hash-0.txt")" \
  || fail "deepfm: $why"
steps=$(grep -ho '[0-9]* synchronous dense steps' "$job"/logs/trainer-*.log | sort -u)
[ "$(echo "$steps" | wc -l)" -eq 1 ] && [ "${steps%% *}" -gt 10 ] \
  && pass "deepfm: both ranks ran $steps" || fail "deepfm: step counts '$steps'"
[ -z "$(leftover "$job")" ] || fail "processes left after a clean run"

# 1b. Two threads per rank: each lockstep step is two batches trained at
# once, their dense gradients summed before the allreduce. 90,000 training
# rows a rank in batches of 1,024 make 88 batches: 44 steps of two. (With
# half the rows, 22 steps, one run in eight on a loaded machine ended 0.02
# to 0.04 below the usual AUC: too few steps to judge quality by.)
job="$TMP/deepfm-t2"
write_config "$job" 2 "type: DEEPFM" 200000 2
out=$(SAMPAN_DENSE_CHECK_EVERY=5 "$SAMPAN" run "$job.yaml" 2>&1); rc=$?
[ $rc -eq 0 ] || { fail "deepfm-t2: run exited $rc"; echo "$out" | tail -8; }
why=$(same_hashes "$job" 2) && pass "deepfm-t2: identical dense hashes with 2 threads a rank" \
  || fail "deepfm-t2: $why"
steps=$(grep -ho '[0-9]* synchronous dense steps (HYBRID), up to 2 batches' \
  "$job"/logs/trainer-*.log | sort -u)
[ "$(echo "$steps" | wc -l)" -eq 1 ] && [ "${steps%% *}" -ge 43 ] \
  && [ "${steps%% *}" -le 45 ] \
  && pass "deepfm-t2: both ranks ran $steps" || fail "deepfm-t2: step counts '$steps'"
auc=$(sed -n 's/^test_auc=//p' "$job/result.txt" 2>/dev/null)
near_planted "deepfm-t2" "$auc" "$out" 0.08

# 2. DCN-v2, 3 trainers.
job="$TMP/dcn3"
write_config "$job" 3 "type: DCN_V2, cross_layers: 2" 60000
out=$(SAMPAN_DENSE_CHECK_EVERY=3 "$SAMPAN" run "$job.yaml" 2>&1); rc=$?
[ $rc -eq 0 ] || { fail "dcn3: run exited $rc"; echo "$out" | tail -8; }
why=$(same_hashes "$job" 3) && pass "dcn3: identical dense hashes on 3 ranks" \
  || fail "dcn3: $why"

# 3. Diverged weights are caught.
job="$TMP/skew"
write_config "$job" 2 "type: DNN" 60000
out=$(SAMPAN_DENSE_CHECK_EVERY=2 SAMPAN_DENSE_TEST_SKEW_RANK=1 \
  "$SAMPAN" run "$job.yaml" 2>&1); rc=$?
[ $rc -ne 0 ] || fail "skew: diverged weights exited 0"
for r in 0 1; do
  grep -q "dense weights differ across ranks after step 2" "$job/logs/trainer-$r.log" \
    || fail "skew: trainer-$r did not report the mismatch"
done
[ $rc -ne 0 ] && pass "skew: mismatch fails the job (exit $rc)"
[ -z "$(leftover "$job")" ] || fail "processes left after a failed job"

# 4. The MLP on the GPU, or a clear failure without one.
job="$TMP/gpu"
write_config "$job" 2 "type: DEEPFM, dense_device: GPU" 60000
out=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
if grep -q "MLP on the GPU" "$job"/logs/trainer-0.log 2>/dev/null; then
  [ $rc -eq 0 ] || fail "gpu: run exited $rc"
  why=$(same_hashes "$job" 2) && pass "gpu: MLP on the GPU, identical hashes" \
    || fail "gpu: $why"
elif [ $rc -ne 0 ] && grep -q "gpu dense path: no usable GPU" \
    "$job"/logs/trainer-0.log; then
  pass "gpu: no GPU here; dense_device GPU fails naming why (exit $rc)"
else
  fail "gpu: neither trained on the GPU nor failed naming why (exit $rc)"
fi
[ -z "$(leftover "$job")" ] || fail "processes left after the gpu job"

# 5. TLS + token: the rendezvous RPCs carry the job's credentials.
pki="$TMP/pki"
mkdir -p "$pki"
(
  cd "$pki" || exit 1
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=sampan-test-ca \
    -keyout ca.key -out ca.pem 2> /dev/null &&
  openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
    -keyout node.key -out node.csr 2> /dev/null &&
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' > ext &&
  openssl x509 -req -in node.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 2 -extfile ext -out node.pem 2> /dev/null &&
  echo 0123456789abcdef-hybrid-token > token
) || fail "tls: openssl could not make certificates"
job="$TMP/tls"
write_config "$job" 2 "type: DNN" 60000
sed -i "s|^cluster: {|cluster: {security: {tls_cert_file: $pki/node.pem, tls_key_file: $pki/node.key,\n            tls_ca_file: $pki/ca.pem, token_file: $pki/token},\n          |" "$job.yaml"
out=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
if [ $rc -eq 0 ] && same_hashes "$job" 2 > /dev/null; then
  pass "tls: hybrid job over TLS + token, identical dense hashes"
else
  fail "tls: run exited $rc"; echo "$out" | tail -8
fi
# Servers log each refused call (common/security.cc; security_test).
refused=$(grep -l "refused a call" "$job"/logs/*.log 2>/dev/null)
[ -z "$refused" ] && pass "tls: no server refused a call" \
  || fail "tls: calls refused in $refused: $(grep -h "refused a call" $refused | head -2)"

# 6. Checkpoints every second in a hybrid job (checkpoint_at_step).
job="$TMP/ckpt"
# Long enough (3 epochs, ~1,050 steps per rank) that the step announced
# ~3 s of steps ahead comes before the end of the input even on a fast,
# idle machine: a round every rank reaches finished is abandoned.
write_config "$job" 2 "type: DNN" 400000
sed -i 's/^table: {/table: {backend: ROCKSDB, /; s/^  batch_size: 1024$/  batch_size: 512\n  epochs: 3/' "$job.yaml"
echo "checkpoint: {every_seconds: 1, keep: 2}" >> "$job.yaml"
out=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
taken=$(grep -c "complete in" "$job/logs/coordinator.log")
at_step=$(grep -m1 -o "started (time) at step [0-9]*" "$job/logs/coordinator.log")
if [ $rc -eq 0 ] && [ "$taken" -ge 1 ] && [ -n "$at_step" ] &&
   ls "$job"/checkpoints/ckpt-*/dense.bin > /dev/null 2>&1 &&
   same_hashes "$job" 2 > /dev/null; then
  pass "ckpt: $taken time-triggered checkpoint(s) with dense.bin, first $at_step"
else
  fail "ckpt: rc $rc, $taken checkpoints, '$at_step'"; echo "$out" | tail -5
  grep -h "checkpoint" "$job/logs/coordinator.log" | tail -5
fi

# 7. Bad data is not retried.
job="$TMP/baddata"
write_bad_rows "$job"
write_config "$job" 2 "type: DEEPFM" 0
sed -i "s|^  synthetic: .*|  synthetic: {rows: 0}\n  train_files: [$job/train.tsv]\n  test_files: [$job/test.tsv]\n  max_bad_fraction: 0.05|" "$job.yaml"
# Checkpoints on: only then would a failed rank be restarted (regrouped).
sed -i 's|heartbeat_timeout_seconds: 10}|heartbeat_timeout_seconds: 10, max_restarts: 3}|; s/^table: {/table: {backend: ROCKSDB, /' "$job.yaml"
echo "checkpoint: {every_steps: 2, keep: 2}" >> "$job.yaml"
out=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
if [ $rc -ne 0 ] && grep -q "exit status 3" <<< "$out" &&
   ! grep -q "restarting all" <<< "$out"; then
  pass "bad data: trainer exit 3, job stopped without a regroup"
else
  fail "bad data: rc $rc; $(grep -E 'exit status|restarting' <<< "$out" | head -3)"
fi
[ -z "$(leftover "$job")" ] || fail "processes left after bad data"

finish
