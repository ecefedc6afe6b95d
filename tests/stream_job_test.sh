#!/usr/bin/env bash
# End-to-end suite for continuous training (data.stream) under `sampan run`:
#   1. 2 days x 4 passes of drifting synthetic data, 2 pservers x 2 trainers:
#      the last pass's marker appears while the job waits and is trained
#      within seconds; every pass is trained once (example count) and scored
#      before training (passes.tsv, result.txt); a base at each day's first
#      pass and deltas between; LATEST names the last; `sampan eval` scores
#      the versions root. Day 2's first pass is empty (marker only), so its
#      base is the live table after day 1: it must equal day 1's base plus
#      deltas bit for bit (no row deleted: no lifecycle thresholds).
#      Warm start (init_model) from day 1's version scores day 2 well above
#      a cold start; a mismatched or corrupt model is refused with exit 2.
#   2. The lifecycle on (delete_threshold): the day-2 base holds fewer rows
#      than day 1's chain and passes.tsv counts the rows evicted.
#   3. A pass with too many malformed rows stops the job with an error that
#      names the pass's file; the versions published before stay readable.
#   4. A HYBRID DeepFM stream: dense weights identical on both ranks after
#      3 passes; its LATEST version scores.
#   5. `sampan validate` refuses what a stream job cannot do (exit 2).
set -uo pipefail

TESTLIB="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
[ -f "$TESTLIB" ] || TESTLIB="$(dirname "$0")/job_testlib.sh"
source "$TESTLIB"

ROWS=3000  # per pass
data="$TMP/stream"
rm -rf "$data"
"$SAMPAN" gen-data --out="$data" --stream_days=2 --passes_per_day=4 \
  --parts_per_pass=2 --rows=$ROWS --seed=5 > /dev/null \
  || { fail "gen-data --stream_days"; finish; }
# Day 2 opens with an empty pass; the last pass's marker comes later.
rm -f "$data"/20261202/00/part-*
mv "$data/20261202/18/_SUCCESS" "$TMP/held-marker"

write_config() {  # dir extra-table-yaml
  cat > "$1.yaml" <<YAML
name: stream-test
output_dir: $1
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 2,
          wait_timeout_seconds: 60}
model: {type: FM, embedding_dim: 4}
table:
  num_shards: 8
$2
data:
  format: CRITEO_TSV
  batch_size: 256
  synthetic: {rows: 0}
  stream:
    root: $data
    poll_seconds: 0.2
    idle_stop_seconds: 6
YAML
}

rows_of() { "$SAMPAN" model-rows "$1" 2>/dev/null | grep -vc '^dense'; }

# 1. The stream.
job="$TMP/s1"
write_config "$job" ""
"$SAMPAN" run "$job.yaml" > "$TMP/s1.out" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  [ "$(cat "$job/versions/LATEST" 2>/dev/null)" = "v-000007" ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
for _ in $(seq 1 50); do  # the next progress line says it waits
  grep -q "waiting for the pass after 20261202/12" "$TMP/s1.out" && break
  sleep 0.1
done
grep -q "waiting for the pass after 20261202/12" "$TMP/s1.out" \
  && pass "the progress line says which pass the job waits after" \
  || fail "no waiting progress line: $(grep '^\[train\]' "$TMP/s1.out" | tail -1)"
mv "$TMP/held-marker" "$data/20261202/18/_SUCCESS"
touch "$data/20261202/18/_SUCCESS"  # written now, as a log writer would
wait $pid; rc=$?
out=$(cat "$TMP/s1.out")
[ $rc -eq 0 ] && pass "stream job exited 0" \
  || fail "stream job exited $rc: $(tail -5 "$TMP/s1.out")"
passes=$(tail -n +2 "$job/passes.tsv" 2>/dev/null | cut -f2 | tr '\n' ' ')
want="20261201/00 20261201/06 20261201/12 20261201/18 20261202/00 20261202/06 20261202/12 20261202/18 "
[ "$passes" = "$want" ] && pass "8 passes in order, each once" \
  || fail "passes.tsv lists '$passes'"
grep -q "[^0-9]$((7 * ROWS)) examples" <<< "$out" \
  && pass "every row of every pass trained once ($((7 * ROWS)) examples)" \
  || fail "not $((7 * ROWS)) examples: $(grep '^\[train\]' <<< "$out" | tail -1)"
kinds=$(tail -n +2 "$job/passes.tsv" | cut -f8 | tr '\n' ' ')
[ "$kinds" = "base delta delta delta base delta delta delta " ] \
  && pass "a base at each day's first pass, deltas between" \
  || fail "version kinds '$kinds'"
# Progressive AUC: pass 0 is scored by an untrained model; later passes by
# the model of the passes before (planted AUC of this data is ~0.8).
aucs=$(tail -n +2 "$job/passes.tsv" | awk -F'\t' '$3 > 0 { print $4 }' | tr '\n' ' ')
awk -v a="$aucs" 'BEGIN { n = split(a, v, " ");
    ok = n == 7 && v[1] > 0.49 && v[1] < 0.51 && v[2] > 0.55;
    for (i = 3; i <= n; i++) if (v[i] < 0.62) ok = 0; exit !ok }' \
  && pass "progressive AUC per scored pass: $aucs" \
  || fail "progressive AUCs '$aucs' (7 scored: 0.5 untrained, then > 0.55, > 0.62)"
grep -q "^last_progressive_auc=" "$job/result.txt" 2>/dev/null \
  && grep -q "^passes=8$" "$job/result.txt" \
  && pass "result.txt has the passes and the last progressive AUC" \
  || fail "result.txt: $(cat "$job/result.txt" 2>/dev/null)"
[ "$(grep -c '<circle' "$job/report.html" 2>/dev/null)" -ge 14 ] \
  && grep -q "Progressive AUC per pass" "$job/report.html" \
  && pass "report.html draws the passes' AUC and freshness" \
  || fail "report.html: $(ls "$job")"
# The live page as the stream ended (cli/job_page.h): the passes, the last
# version, the per-pass chart.
grep -q 'id="passes" data-value="8"' "$job/job.html" 2>/dev/null \
  && grep -q "v-000008 delta" "$job/job.html" \
  && grep -q "Progressive AUC per pass" "$job/job.html" \
  && pass "job.html shows 8 passes, v-000008 and the per-pass chart" \
  || fail "job.html: $(grep -o 'id="passes"[^<]*' "$job/job.html" 2>&1)"
[ "$(cat "$job/versions/LATEST" 2>/dev/null)" = "v-000008" ] \
  && pass "LATEST names v-000008" || fail "LATEST: $(cat "$job/versions/LATEST" 2>/dev/null)"
# The held-back pass was trained within seconds of its marker.
fresh=$(awk -F'\t' 'END { print $9 }' "$job/passes.tsv")
awk -v f="$fresh" 'BEGIN { exit !(f >= 0 && f < 30) }' \
  && pass "the last pass was published $fresh s after its marker" \
  || fail "freshness of the last pass '$fresh'"
# Day 2's base (after an empty pass) is day 1's base plus its deltas.
a=$("$SAMPAN" model-rows "$job/versions/v-000004" 2>/dev/null | md5sum)
b=$("$SAMPAN" model-rows "$job/versions/v-000005" 2>/dev/null | md5sum)
n=$(rows_of "$job/versions/v-000004")
[ "$a" = "$b" ] && [ "$n" -gt 1000 ] \
  && pass "base v-000005 equals base v-000001 + 3 deltas bit for bit ($n rows)" \
  || fail "v-000004 chain and v-000005 base differ ($n rows)"
cat "$data"/20261202/18/part-* > "$TMP/last-pass.tsv"
ev=$("$SAMPAN" eval "$job/versions" "$TMP/last-pass.tsv" 2>&1)
grep -q "v-000008" <<< "$ev" && grep -q "^AUC " <<< "$ev" \
  && pass "eval scores the versions root (LATEST): $(grep '^AUC' <<< "$ev")" \
  || fail "eval of the versions root: $ev"
[ -z "$(leftover "$job")" ] || fail "processes left: $(leftover "$job")"

# Warm start from day 1's model (v-000004: base v-000001 + 3 deltas) against
# a cold start, both scoring day 2's first trained pass before training it.
warm_auc=""; cold_auc=""
for mode in warm cold; do
  job="$TMP/$mode"
  write_config "$job" ""
  sed -i 's|    idle_stop_seconds: 6|    start_pass: "20261202/06"\n    end_pass: "20261202/06"|' "$job.yaml"
  [ $mode = warm ] && echo "init_model: $TMP/s1/versions/v-000004" >> "$job.yaml"
  out=$("$SAMPAN" run "$job.yaml" 2>&1) || fail "$mode start: $(tail -3 <<< "$out")"
  eval "${mode}_auc=\$(awk -F'\t' 'NR == 2 { print \$4 }' \"$job/passes.tsv\" 2>/dev/null)"
done
awk -v w="$warm_auc" -v c="$cold_auc" 'BEGIN { exit !(w != "" && c != "" && w > c + 0.05) }' \
  && pass "warm start from day 1 scores day 2's pass $warm_auc against $cold_auc cold" \
  || fail "warm start AUC '$warm_auc' not above cold '$cold_auc' + 0.05"
# The warm job scored the pass with exactly the init model: its progressive
# logloss is eval's of v-000004 on the same rows.
cat "$data"/20261202/06/part-* > "$TMP/pass-0206.tsv"
want=$("$SAMPAN" eval "$TMP/s1/versions/v-000004" "$TMP/pass-0206.tsv" 2>/dev/null |
  sed -n 's/.*logloss \([^ ]*\) .*/\1/p')
got=$(awk -F'\t' 'NR == 2 { print $5 }' "$TMP/warm/passes.tsv")
[ -n "$want" ] && [ "$want" = "$got" ] \
  && pass "the warm job starts from exactly the init model (logloss $got = eval's)" \
  || fail "warm start logloss '$got', eval of the init model '$want'"
# ASYNC: the dense weights come back through the pservers' dense table.
job="$TMP/async-day1"
write_config "$job" ""
sed -i 's/model: {type: FM, embedding_dim: 4}/model: {type: DEEPFM, embedding_dim: 4, hidden: [8], mode: ASYNC}/; s|    idle_stop_seconds: 6|    end_pass: "20261201/18"|' "$job.yaml"
"$SAMPAN" run "$job.yaml" > /dev/null 2>&1 || fail "ASYNC day 1 job"
job="$TMP/async-warm"
write_config "$job" ""
sed -i 's/model: {type: FM, embedding_dim: 4}/model: {type: DEEPFM, embedding_dim: 4, hidden: [8], mode: ASYNC}/; s|    idle_stop_seconds: 6|    start_pass: "20261202/06"\n    end_pass: "20261202/06"|' "$job.yaml"
echo "init_model: $TMP/async-day1/versions" >> "$job.yaml"
out=$("$SAMPAN" run "$job.yaml" 2>&1) || fail "ASYNC warm job: $(tail -3 <<< "$out")"
want=$("$SAMPAN" eval "$TMP/async-day1/versions" "$TMP/pass-0206.tsv" 2>/dev/null |
  sed -n 's/.*logloss \([^ ]*\) .*/\1/p')
got=$(awk -F'\t' 'NR == 2 { print $5 }' "$job/passes.tsv" 2>/dev/null)
[ -n "$want" ] && [ "$want" = "$got" ] \
  && pass "ASYNC DeepFM warm start: sparse rows and the dense table exactly the init model's (logloss $got)" \
  || fail "ASYNC warm start logloss '$got', eval of the init model '$want'"
init_rows=$(rows_of "$TMP/s1/versions/v-000004")
warm_rows=$(rows_of "$TMP/warm/versions")
[ "$warm_rows" -gt "$init_rows" ] \
  && pass "the warm job's first base holds the init model's rows ($init_rows) and its own ($warm_rows)" \
  || fail "warm base has $warm_rows rows, the init model $init_rows"
# A model of another shape, or a corrupt one: exit 2, nothing started.
job="$TMP/mismatch"
write_config "$job" ""
sed -i 's/embedding_dim: 4/embedding_dim: 8/' "$job.yaml"
echo "init_model: $TMP/s1/versions" >> "$job.yaml"
err=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "model.embedding_dim is 4 there, 8 here" <<< "$err" \
  && [ ! -d "$job/logs" ] \
  && pass "warm start from another model's shape: exit 2 ($err)" \
  || fail "mismatched init_model: exit $rc: $err"
cp -r "$TMP/s1/versions" "$TMP/corrupt"
printf 'x' | dd of="$TMP/corrupt/v-000003/sparse-00001.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
job="$TMP/corrupt-job"
write_config "$job" ""
echo "init_model: $TMP/corrupt/v-000004" >> "$job.yaml"
err=$("$SAMPAN" validate "$job.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "v-000003/sparse-00001.bin" <<< "$err" \
  && pass "warm start from a corrupt version: exit 2 naming the file" \
  || fail "corrupt init_model: exit $rc: $err"

# 2. The lifecycle: rows seen once without a click go at the day's shrink.
mv "$data/20261202/18/_SUCCESS" "$TMP/held-marker"  # 7 passes this time
job="$TMP/s2"
write_config "$job" "  accessor: {delete_threshold: 0.25}"
out=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
evicted=$(awk -F'\t' '$8 == "base" { s += $10 } END { print s + 0 }' "$job/passes.tsv" 2>/dev/null)
before=$(rows_of "$job/versions/v-000004")
after=$(rows_of "$job/versions/v-000005")
[ $rc -eq 0 ] && [ "$evicted" -gt 0 ] && [ "$after" -lt "$before" ] \
  && [ $((before - after)) -eq "$evicted" ] \
  && pass "the day's shrink evicted $evicted rows: $before -> $after rows" \
  || fail "lifecycle: rc $rc, evicted '$evicted', rows $before -> $after: $(tail -3 <<< "$out")"
mv "$TMP/held-marker" "$data/20261202/18/_SUCCESS"

# 3. A malformed pass stops the job, naming the file; versions stay.
bad="$TMP/bad-stream"
rm -rf "$bad"; mkdir -p "$bad"
cp -r "$data/20261201" "$bad/"
for i in $(seq 1 300); do echo "1	broken"; done >> "$bad/20261201/12/part-00001"
job="$TMP/s3"
write_config "$job" ""
sed -i "s|root: $data|root: $bad|" "$job.yaml"
out=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "20261201/12/part-00001" <<< "$out" \
  && pass "a malformed pass stops the job naming its file (exit $rc)" \
  || fail "malformed pass: exit $rc: $(tail -3 <<< "$out")"
[ "$(cat "$job/versions/LATEST" 2>/dev/null)" = "v-000002" ] \
  && "$SAMPAN" eval "$job/versions" "$TMP/last-pass.tsv" > /dev/null 2>&1 \
  && pass "the versions published before it are intact (LATEST v-000002)" \
  || fail "versions after the failure: LATEST $(cat "$job/versions/LATEST" 2>/dev/null)"
[ -z "$(leftover "$job")" ] || fail "processes left: $(leftover "$job")"

# 4. A deep model in HYBRID mode: the dense weights live across passes,
# stay identical on both ranks, and go into every version.
job="$TMP/hybrid"
write_config "$job" ""
sed -i 's/model: {type: FM, embedding_dim: 4}/model: {type: DEEPFM, embedding_dim: 4, hidden: [16, 8]}/; s|    idle_stop_seconds: 6|    end_pass: "20261201/12"|' "$job.yaml"
out=$("$SAMPAN" run "$job.yaml" 2>&1); rc=$?
h0=$(cat "$job/dense_hash-0.txt" 2>/dev/null); h1=$(cat "$job/dense_hash-1.txt" 2>/dev/null)
ev=$("$SAMPAN" eval "$job/versions" "$TMP/last-pass.tsv" 2>&1)
[ $rc -eq 0 ] && [ "$(tail -n +2 "$job/passes.tsv" | wc -l)" -eq 3 ] \
  && [ -n "$h0" ] && [ "$h0" = "$h1" ] && grep -q "^AUC " <<< "$ev" \
  && pass "HYBRID DeepFM stream: 3 passes, dense weights equal on both ranks ($h0), LATEST scores" \
  || fail "HYBRID stream: exit $rc, hashes '$h0' '$h1': $(tail -3 <<< "$out") $ev"

# 5. Refused before anything starts.
job="$TMP/s4"
write_config "$job" "  backend: ROCKSDB
  data_dir: $TMP/s4-db"
printf 'checkpoint: {every_steps: 10}\n' >> "$job.yaml"
err=$("$SAMPAN" validate "$job.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "checkpoint" <<< "$err" \
  && pass "validate refuses checkpoints in a stream (exit 2)" \
  || fail "validate: exit $rc: $err"
err=$("$SAMPAN" train-local "$job.yaml" 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "data.stream" <<< "$err" \
  && pass "train-local refuses a stream (exit 2)" \
  || fail "train-local: exit $rc: $err"

finish
