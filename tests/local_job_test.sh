#!/usr/bin/env bash
# End-to-end suite for `sampan run`: real child processes on loopback.
#   1. a small FM job trains to within 0.07 of the planted model's test AUC
#      (it reaches ~0.05 below), leaving no process;
#   2. a config error exits with status 2 before anything starts;
#   3. a data file with too many malformed rows fails the job cleanly: non-zero
#      exit, the trainer's last log lines, file:line in the log, no process left;
#   4. Ctrl-C (SIGINT) stops the job: exit 130, no process left;
#   5. a SIGKILLed launcher takes its children with it;
#   6. gzip files train with data.split BY_FILE (and a shuffle window), and
#      split by byte range they are refused with status 2 before anything
#      starts;
#   7. Avazu (with its header), libsvm and libffm files train, split by byte
#      range between the trainers, with a shuffle window, and score a sane
#      test AUC;
#   8. data.holdout_fraction without test_files: the trainers train on the
#      file's head only, each row once, and rank 0 tests on its tail, the
#      same rows `sampan train-local` holds out; gzip files too, a trainer
#      each.
set -uo pipefail

TESTLIB="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
[ -f "$TESTLIB" ] || TESTLIB="$(dirname "$0")/job_testlib.sh"
source "$TESTLIB"

write_config() {  # dir rows extra-yaml
  cat > "$1.yaml" <<YAML
name: test
output_dir: $1
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 2,
          wait_timeout_seconds: 30, heartbeat_timeout_seconds: 10}
model: {type: FM, embedding_dim: 8}
table: {num_shards: 32, optimizer: {type: ADAGRAD, learning_rate: 0.05}}
data:
  batch_size: 1024
  synthetic: {rows: $2, seed: 3, test_fraction: 0.1}
$3
YAML
}

# $1: $2 Criteo rows whose label is a function of their C fields
# (learnable); with $3, a blank line before row $3.
write_criteo_rows() {  # file rows [blank-before]
  awk -v n="$2" -v blank="${3:--1}" 'BEGIN { for (i = 0; i < n; i++) {
    if (i == blank) printf "\n"
    printf "%d", (i % 977) % 5 < 2
    for (f = 0; f < 13; f++) printf "\t%d", (i * 7 + f) % 50
    for (f = 0; f < 26; f++) printf "\t%08x", ((i % 977) * 13 + f * 101) % 977
    printf "\n" } }' > "$1"
}

# Runs job $1 (`what` in messages): it must exit 0, score test AUC > 0.9
# on $2 test rows and train $3 examples (every row once). Sets $out.
run_and_check() {  # job test-rows examples what
  out=$("$SAMPAN" run "$1.yaml" 2>&1); local rc=$?
  local auc rows
  auc=$(sed -n 's/^test_auc=//p' "$1/result.txt" 2>/dev/null)
  rows=$(sed -n 's/^test_rows=//p' "$1/result.txt" 2>/dev/null)
  [ $rc -eq 0 ] && [ "$rows" = "$2" ] && awk -v a="$auc" 'BEGIN { exit !(a > 0.9) }' \
    && pass "$4 trains: test AUC $auc on $rows rows" \
    || fail "$4 job exited $rc, test AUC '$auc' on '$rows' rows: $(echo "$out" | tail -3)"
  grep -q "[^0-9]$3 examples" <<< "$out" && pass "$4: every row trained once" \
    || fail "$4 did not train $3 examples: $(echo "$out" | grep '^\[train\]' | tail -1)"
}

# 1. Train and evaluate.
job="$TMP/ok"
write_config "$job" 300000 ""
out=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
echo "$out" | tail -5
auc=$(sed -n 's/^test_auc=//p' "$job/result.txt" 2>/dev/null)
# FM reaches ~0.797 here against the planted 0.847.
[ $rc -eq 0 ] || fail "run exited $rc"
near_planted "trained" "$auc" "$out" 0.07
[ -z "$(leftover "$job")" ] || fail "processes left after a clean run: $(leftover "$job")"

# 2. Config error: exit status 2, nothing started.
printf 'model:\n  hidden: [400, "x"]\n' > "$TMP/bad.yaml"
err=$("$SAMPAN" run "$TMP/bad.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "config error exited $rc, want 2"
grep -q 'bad.yaml:2: model.hidden\[1\]: expected' <<< "$err" \
  && pass "config error names file, line and field" \
  || fail "config error message: $err"

# 3. Malformed rows over the limit fail the job with a clear reason.
job="$TMP/badrows"
write_bad_rows "$job"
write_config "$job" 0 "  train_files: [$job/train.tsv]
  test_files: [$job/test.tsv]
  max_bad_fraction: 0.05"
err=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
[ $rc -ne 0 ] || fail "bad rows: exited 0"
grep -q "max_bad_fraction" <<< "$err" && pass "bad-row limit stops the job" \
  || fail "bad-row failure does not say why: $err"
# Every 10th line from line 4 is bad; whichever trainer reaches the limit
# first stops the job, possibly before the other has read a row, so the
# report may come from either, with the line's number in the whole file.
grep -qE "train.tsv:[0-9]*4: " "$job"/logs/trainer-*.log \
  && pass "malformed row reported with file and line" \
  || fail "no file:line report in the trainers' logs"
[ -z "$(leftover "$job")" ] || fail "processes left after a failed job"

# 4. Ctrl-C stops everything.
job="$TMP/interrupt"
write_config "$job" 2000000 ""
"$SAMPAN" run "$job.yaml" > "$TMP/interrupt.out" 2>&1 &
launcher=$!
for _ in $(seq 1 300); do
  grep -q '^\[train\]' "$TMP/interrupt.out" && break; sleep 0.1
done
[ -n "$(leftover "$job")" ] || fail "interrupt: job never started"
kill -INT $launcher; wait $launcher; rc=$?
[ $rc -eq 130 ] && pass "Ctrl-C exits 130" || fail "Ctrl-C exited $rc"
sleep 0.2
[ -z "$(leftover "$job")" ] || fail "processes left after Ctrl-C"

# 5. A SIGKILLed launcher leaves nothing behind.
"$SAMPAN" run "$job.yaml" > "$TMP/kill.out" 2>&1 &
launcher=$!
for _ in $(seq 1 300); do
  grep -q '^\[train\]' "$TMP/kill.out" && break; sleep 0.1
done
kill -KILL $launcher; wait $launcher 2>/dev/null
for _ in $(seq 1 50); do [ -z "$(leftover "$job")" ] && break; sleep 0.1; done
[ -z "$(leftover "$job")" ] && pass "children die with a SIGKILLed launcher" \
  || fail "processes outlived a SIGKILLed launcher: $(leftover "$job")"

# 6. Gzip input: a whole file per trainer.
job="$TMP/gzip"
mkdir -p "$job"
write_criteo_rows "$job/all.tsv" 40000
head -20000 "$job/all.tsv" | gzip > "$job/a.tsv.gz"
sed -n 20001,40000p "$job/all.tsv" | gzip > "$job/b.tsv.gz"
head -4000 "$job/all.tsv" | gzip > "$job/test.tsv.gz"
write_config "$job" 0 "  train_files: [$job/a.tsv.gz, $job/b.tsv.gz]
  test_files: [$job/test.tsv.gz]
  split: BY_FILE
  shuffle_buffer_rows: 5000"
run_and_check "$job" 4000 40000 "gzip split BY_FILE"
sed -i 's/  split: BY_FILE/  split: BY_LINE_RANGE/' "$job.yaml"
rm -rf "$job/logs"
err=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "a.tsv.gz: a gzip file cannot be split into 2 byte ranges" <<< "$err" \
  && pass "gzip split by byte range refused with status 2" \
  || fail "gzip by byte range: exited $rc: $err"
[ ! -d "$job/logs" ] || fail "gzip by byte range started something ($job/logs exists)"

# 7. The other formats. Row i's label and features are functions of i % 977
# (learnable); six fields of each, as formats.h reads them.
for format in AVAZU_CSV LIBSVM LIBFFM; do
  job="$TMP/$format"
  mkdir -p "$job"
  awk -v format=$format 'BEGIN {
    if (format == "AVAZU_CSV") {
      printf "id,click,hour"; for (c = 1; c <= 21; c++) printf ",C%d", c
      printf "\n" }
    for (i = 0; i < 24000; i++) {
      k = i % 977; click = k % 5 < 2
      if (format == "AVAZU_CSV") {
        printf "%d,%d,141021%02d", 1000000 + i, click, i % 24
        for (c = 0; c < 21; c++) printf ",%x", c < 6 ? (k * 13 + c * 101) % 977 : c
      } else {
        printf "%s", format == "LIBSVM" ? (click ? "+1" : "-1") : click
        for (f = 0; f < 6; f++) {
          idx = f * 1000 + (k * 13 + f * 101) % 977
          if (format == "LIBFFM") printf " %d:%d:1", f, idx
          else printf " %d:1", idx
        }
      }
      printf "\n" } }' > "$job/all"
  header=0; [ $format = AVAZU_CSV ] && header=1
  head -$((20000 + header)) "$job/all" > "$job/train"
  { head -$header "$job/all"; tail -4000 "$job/all"; } > "$job/test"
  write_config "$job" 0 "  format: $format
  train_files: [$job/train]
  test_files: [$job/test]
  shuffle_buffer_rows: 3000"
  [ $format = LIBFFM ] && sed -i 's/embedding_dim: 8}/embedding_dim: 8, num_fields: 6}/' "$job.yaml"
  run_and_check "$job" 4000 20000 "$format"
  [ -z "$(leftover "$job")" ] || fail "$format: processes left after the job"
done

# 8. A held-out tail: 20001 lines (a blank one too, which does not count),
# 15% held out: floor(0.85 * 20001) = 17000 train, the last 3001 test.
job="$TMP/holdout"
mkdir -p "$job"
write_criteo_rows "$job/all.tsv" 20001 9000
write_config "$job" 0 "  train_files: [$job/all.tsv]
  holdout_fraction: 0.15
  shuffle_buffer_rows: 3000"
run_and_check "$job" 3001 17000 "holdout"
[ -z "$(leftover "$job")" ] || fail "holdout: processes left after the job"
rm -f "$job/result.txt"
out=$("$SAMPAN" train-local "$job.yaml" 2>&1); rc=$?
rows=$(sed -n 's/^test_rows=//p' "$job/result.txt" 2>/dev/null)
[ $rc -eq 0 ] && [ "$rows" = 3001 ] \
  && pass "holdout: train-local holds out the same 3001 rows" \
  || fail "holdout: train-local exited $rc with '$rows' test rows, not 3001: $(echo "$out" | tail -3)"
# The same lines as two gzip files, a trainer each, each cut (10000 lines:
# 8500 + 1500; 10001: 8500 + 1501).
head -10000 "$job/all.tsv" | gzip > "$job/a.tsv.gz"
tail -n +10001 "$job/all.tsv" | gzip > "$job/b.tsv.gz"
sed -i "s|train_files: .*|train_files: [$job/a.tsv.gz, $job/b.tsv.gz]\n  split: BY_FILE|" "$job.yaml"
run_and_check "$job" 3001 17000 "holdout of gzip files BY_FILE"

finish
