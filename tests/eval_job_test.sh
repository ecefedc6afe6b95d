#!/usr/bin/env bash
# End-to-end suite for model export and `sampan eval MODEL DATA`:
#   1. train-local DeepFM (rare signs merged, min_feature_count 2, integer
#      fields as buckets and dense log inputs), DCN-v2 with per-field
#      embedding widths, and LR
#      export <output_dir>/model; eval on the test file prints the AUC,
#      logloss, COPC and rows of the trainer's own test evaluation;
#   2. `sampan run` DeepFM (hybrid), FM, and LR with dense log inputs and
#      rare signs merged, with 2 trainers, export one sparse part per rank;
#      eval of the merged model equals rank 0's result.txt;
#   3. errors: wrong arguments exit 2; a directory that is no model, a
#      missing sparse part, a corrupt dense.bin and data of the wrong shape
#      exit 1 naming the file.
set -uo pipefail

TESTLIB="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
[ -f "$TESTLIB" ] || TESTLIB="$(dirname "$0")/job_testlib.sh"
source "$TESTLIB"

# Prints "auc logloss copc rows" from a result.txt, rounded as eval prints.
from_result() {
  awk -F= '{ v[$1] = $2 } END { printf "%.6f %.6f %.4f %d\n",
    v["test_auc"], v["test_logloss"], v["test_copc"], v["test_rows"] }' "$1"
}
# The same four from `sampan eval` output.
from_eval() { sed -n 's/^AUC \([^ ]*\)  logloss \([^ ]*\)  COPC \([^ ]*\)  rows \([0-9]*\)$/\1 \2 \3 \4/p'; }

# Compares eval with the trainer's result: AUC and rows exactly, logloss
# and COPC to the printed precision of result.txt (4 and 3 decimals there).
# Exact AUC holds because every trainer trains and scores its test set with
# the same CtrModel step as eval.
same_metrics() {  # name model-dir data result.txt
  local got want
  got=$("$SAMPAN" eval "$2" "$3" 2>/dev/null | from_eval)
  want=$(from_result "$4")
  if [ -z "$got" ]; then fail "$1: eval printed no metrics"; return; fi
  if awk -v g="$got" -v w="$want" 'BEGIN { split(g, a, " "); split(w, b, " ");
      exit !(a[1] == b[1] && a[4] == b[4] &&
             (a[2] - b[2])^2 < 1e-10 &&
             (a[3] - b[3])^2 < 1e-6) }'; then
    pass "$1: eval '$got' equals the trainer's '$want'"
  else fail "$1: eval '$got', trainer '$want'"; fi
}

"$SAMPAN" gen-data --out="$TMP/data" --rows=30000 --seed=5 >/dev/null \
  || fail "gen-data failed"

write_local() {  # name model-yaml extra-data-yaml
  cat > "$TMP/$1.yaml" <<YAML
name: $1
output_dir: $TMP/$1
cluster: {threads_per_trainer: 2}
model: {$2, embedding_dim: 8, hidden: [32, 16],
        dense_optimizer: {type: ADAM, learning_rate: 0.001}}
table: {num_shards: 8, optimizer: {type: ADAGRAD, learning_rate: 0.05}}
data: {batch_size: 512, synthetic: {rows: 0}, $3
       train_files: [$TMP/data/train.tsv], test_files: [$TMP/data/test.tsv]}
YAML
}

# 1. Local.
write_local deepfm "type: DEEPFM" \
  "min_feature_count: 2, integer_features: BUCKETS_AND_LOG_DENSE,"
"$SAMPAN" train-local "$TMP/deepfm.yaml" >/dev/null 2>&1 \
  || fail "train-local deepfm failed"
same_metrics "local deepfm" "$TMP/deepfm/model" "$TMP/data/test.tsv" \
  "$TMP/deepfm/result.txt"
write_local dcn "type: DCN_V2, cross_layers: 2, field_embedding_dims: [2, 4, 0, 8]" ""
"$SAMPAN" train-local "$TMP/dcn.yaml" >/dev/null 2>&1 \
  || fail "train-local dcn failed"
same_metrics "local dcn, per-field widths" "$TMP/dcn/model" "$TMP/data/test.tsv" \
  "$TMP/dcn/result.txt"
write_local lr "type: LR" ""
"$SAMPAN" train-local "$TMP/lr.yaml" >/dev/null 2>&1 \
  || fail "train-local lr failed"
same_metrics "local lr" "$TMP/lr/model" "$TMP/data/test.tsv" "$TMP/lr/result.txt"

# 2. Distributed, hybrid.
job="$TMP/run"
cat > "$job.yaml" <<YAML
name: run
output_dir: $job
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 30, heartbeat_timeout_seconds: 10}
model: {type: DEEPFM, embedding_dim: 8, hidden: [32, 16],
        dense_optimizer: {type: ADAM, learning_rate: 0.001}}
table: {num_shards: 16, optimizer: {type: ADAGRAD, learning_rate: 0.05}}
data: {batch_size: 1024, synthetic: {rows: 40000, seed: 3, test_fraction: 0.1}}
YAML
out=$("$SAMPAN" run "$job.yaml" 2>&1) || { fail "run exited $?"; echo "$out" | tail -5; }
[ -f "$job/model/sparse-00000.bin" ] && [ -f "$job/model/sparse-00001.bin" ] \
  && pass "run: one sparse part per rank" || fail "run: sparse parts missing"
same_metrics "run deepfm" "$job/model" "$job/data/test.tsv" "$job/result.txt"
# FM with Hogwild workers.
sed -e 's/type: DEEPFM/type: FM/' -e "s|$job|$job-fm|" -e 's/threads_per_trainer: 1/threads_per_trainer: 2/' \
  "$job.yaml" > "$job-fm.yaml"
"$SAMPAN" run "$job-fm.yaml" >/dev/null 2>&1 || fail "run fm exited $?"
same_metrics "run fm" "$job-fm/model" "$job-fm/data/test.tsv" "$job-fm/result.txt"
# LR with the LR preset's features: integers as buckets and dense log inputs
# (their weights in the pservers' dense table), empty-field signs, and rare
# signs merged (min_feature_count 3), counted alike by both trainers.
job2="$TMP/run-lr"
cat > "$job2.yaml" <<YAML
name: run-lr
output_dir: $job2
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 2,
          wait_timeout_seconds: 30, heartbeat_timeout_seconds: 10}
model: {type: LR}
table: {num_shards: 16, optimizer: {type: FTRL, learning_rate: 0.05, l1: 0.1, l2: 0.1}}
data:
  format: CRITEO_TSV
  train_files: [$TMP/data/train.tsv]
  test_files: [$TMP/data/test.tsv]
  batch_size: 1024
  min_feature_count: 3
  integer_features: BUCKETS_AND_LOG_DENSE
  empty_field_signs: true
  synthetic: {rows: 0}
YAML
out=$("$SAMPAN" run "$job2.yaml" 2>&1) || { fail "run lr exited $?"; echo "$out" | tail -5; }
kept=$(grep -ho 'min_feature_count 3: [0-9]* signs keep' "$job2"/logs/trainer-*.log | sort -u)
[ "$(echo "$kept" | grep -c .)" -eq 1 ] && pass "run lr: both trainers: $kept" \
  || fail "run lr: rare-sign counts differ or missing: '$kept'"
grep -q "^min_feature_count=3" "$job2/model/MODEL" \
  && pass "run lr: the export records min_feature_count" || fail "run lr: MODEL lacks min_feature_count"
same_metrics "run lr (log inputs, rare signs)" "$job2/model" "$TMP/data/test.tsv" "$job2/result.txt"

# 3. Errors.
"$SAMPAN" eval "$TMP/deepfm/model" >/dev/null 2>&1
[ $? -eq 2 ] && pass "one argument exits 2" || fail "one argument did not exit 2"
expect_error() {  # name model data text
  local out rc
  out=$("$SAMPAN" eval "$2" "$3" 2>&1); rc=$?
  if [ $rc -eq 1 ] && grep -q -- "$4" <<< "$out"; then pass "$1: $(echo "$out" | tail -1 | cut -c1-150)"
  else fail "$1: exit $rc, wanted 1 and '$4' in: $out"; fi
}
expect_error "not a model" "$TMP/data" "$TMP/data/test.tsv" "$TMP/data/MODEL"
rm "$job/model/sparse-00001.bin"
expect_error "missing part" "$job/model" "$job/data/test.tsv" "sparse-00001.bin"
cp -r "$TMP/deepfm/model" "$TMP/corrupt"
printf 'X' | dd of="$TMP/corrupt/dense.bin" bs=1 seek=200 conv=notrunc 2>/dev/null
expect_error "corrupt dense" "$TMP/corrupt" "$TMP/data/test.tsv" "dense.bin: corrupt (CRC32"
sed -i 's/hidden: 16/hidden: 17/' "$TMP/deepfm/model/job.pbtxt"
expect_error "other shape" "$TMP/deepfm/model" "$TMP/data/test.tsv" "mlp1.W 32x16"
expect_error "missing data" "$TMP/lr/model" "$TMP/nothing.tsv" "$TMP/nothing.tsv"
finish
