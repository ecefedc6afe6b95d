#!/usr/bin/env bash
# Every model, every mode and every input format trains under `sampan run`
# (issue 21: `sampan run` accepts what train-local accepts). One planted
# data set (`sampan gen-data`) is written in each format, so that every
# job can learn; the jobs pair models, modes and formats so that each
# model, each mode and each format (Criteo with dense log inputs too) is
# covered, and each job must exit 0, score its test rows above chance and
# export a model that `sampan eval` scores exactly as rank 0 did.
set -uo pipefail

TESTLIB="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
[ -f "$TESTLIB" ] || TESTLIB="$(dirname "$0")/job_testlib.sh"
source "$TESTLIB"

data="$TMP/data"
"$SAMPAN" gen-data --out="$data" --rows=24000 --seed=11 --test_fraction=0.25 \
  >/dev/null || { fail "gen-data"; finish; }
# The same rows in the other formats: Avazu's 21 columns after hour are
# C1..C21, libsvm's features every field's token, libffm's each in its field.
for split in train test; do
  awk -F'\t' -v OFS=, 'BEGIN { print "id,click,hour" substr(",C1,C2,C3,C4,C5,C6,C7,C8,C9,C10,C11,C12,C13,C14,C15,C16,C17,C18,C19,C20,C21", 1) }
    { line = NR "," $1 "," 14102100 + NR % 24
      for (f = 15; f <= 35; f++) line = line "," ($f == "" ? "e" : $f)
      print line }' "$data/$split.tsv" > "$data/$split.avazu"
  awk -F'\t' '{ line = $1; for (f = 2; f <= 40; f++) if ($f != "") line = line " " f "_" $f ":1"
    print line }' "$data/$split.tsv" > "$data/$split.svm"
  awk -F'\t' '{ line = $1; for (f = 2; f <= 40; f++) if ($f != "") line = line " " f - 2 ":" $f ":1"
    print line }' "$data/$split.tsv" > "$data/$split.ffm"
done

job_case() {  # name model-yaml format extension data-yaml
  local job="$TMP/$1"
  cat > "$job.yaml" <<YAML
name: $1
output_dir: $job
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 2,
          wait_timeout_seconds: 30, heartbeat_timeout_seconds: 10}
model: {$2, embedding_dim: 8, hidden: [32, 16],
        dense_optimizer: {type: ADAM, learning_rate: 0.01}}
table: {num_shards: 16, optimizer: {type: ADAGRAD, learning_rate: 0.05}}
data:
  format: $3
  train_files: [$data/train.$4]
  test_files: [$data/test.$4]
  batch_size: 256
  synthetic: {rows: 0}
$5
YAML
  local out rc auc rows got
  out=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
  auc=$(sed -n 's/^test_auc=//p' "$job/result.txt" 2>/dev/null)
  rows=$(sed -n 's/^test_rows=//p' "$job/result.txt" 2>/dev/null)
  if [ $rc -ne 0 ] || [ "$rows" != 6000 ] \
     || ! awk -v a="$auc" 'BEGIN { exit !(a > 0.6) }'; then
    fail "$1: exit $rc, test AUC '$auc' on '$rows' rows: $(echo "$out" | tail -3)"
    return
  fi
  got=$("$SAMPAN" eval "$job/model" "$data/test.$4" 2>/dev/null | awk '{ print $2 }')
  [ "$got" = "$auc" ] && pass "$1: test AUC $auc, and its export scores the same" \
    || fail "$1: eval of the export '$got' != the trainers' $auc"
  [ -z "$(leftover "$job")" ] || fail "$1: processes left"
}

# Hogwild LR and FM; FM's dense log inputs live in the pservers' dense table.
job_case lr-avazu "type: LR" AVAZU_CSV avazu ""
job_case fm-libffm "type: FM, num_fields: 39" LIBFFM ffm ""
job_case fm-criteo-log "type: FM" CRITEO_TSV tsv \
  "  integer_features: BUCKETS_AND_LOG_DENSE"
# Deep models in each mode.
job_case dnn-criteo-sync "type: DNN, mode: SYNC" CRITEO_TSV tsv \
  "  integer_features: LOG_DENSE"
job_case widedeep-libsvm-async "type: WIDE_DEEP, mode: ASYNC" LIBSVM svm ""
job_case deepfm-criteo-hybrid "type: DEEPFM" CRITEO_TSV tsv \
  "  integer_features: BUCKETS_AND_LOG_DENSE
  empty_field_signs: true
  min_feature_count: 2"
job_case dcn-avazu-widths "type: DCN_V2, cross_layers: 2, field_embedding_dims: [4, 8, 2]" \
  AVAZU_CSV avazu ""

# What no mode can do is refused before anything starts.
bad="$TMP/bad"
sed 's/^  batch_size: 256$/  batch_size: 256\n  validation_fraction: 1/' "$TMP/lr-avazu.yaml" \
  | sed "s|$TMP/lr-avazu|$bad|" > "$bad.yaml"
err=$("$SAMPAN" validate "$bad.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "data.validation_fraction" <<< "$err" \
  && pass "validate refuses data.validation_fraction with status 2" \
  || fail "validate of validation_fraction: exit $rc: $err"
"$SAMPAN" run "$bad.yaml" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && [ ! -d "$bad/logs" ] && pass "run refuses it before starting anything" \
  || fail "run of validation_fraction: exit $rc"

# One gzip file cannot be split by byte range among several trainers:
# validate says so (and the way out), as run would.
gz="$TMP/gz"
gzip -c "$data/train.avazu" > "$data/train.avazu.gz"
sed "s|$data/train.avazu|$data/train.avazu.gz|; s|$TMP/lr-avazu|$gz|" "$TMP/lr-avazu.yaml" > "$gz.yaml"
err=$("$SAMPAN" validate "$gz.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "a gzip file cannot be split into 2 byte ranges" <<< "$err" \
  && grep -q "data.split: BY_FILE" <<< "$err" \
  && pass "validate refuses one gzip file split among 2 trainers, naming BY_FILE" \
  || fail "validate of a split gzip file: exit $rc: $err"

finish
