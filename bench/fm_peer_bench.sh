#!/usr/bin/env bash
# FM on a large vocabulary, side by side with xLearn (a real single-machine
# peer built outside the repo), on the same rows and threads, alternated:
#   - data: `sampan gen-data --vocab_scale=$VOCAB` (millions of distinct
#     signs, most first seen during the first epoch: rows being created);
#     xLearn reads the same rows as libffm (bench/criteo_to_libffm.py, the
#     Criteo-winners' features, which Sampan's Criteo reader computes too);
#   - Sampan: `sampan train-local` FM dim 8, batch 2048, table defaults;
#     xLearn: `xlearn_train -s 1 -k 8` with its defaults, its binary cache
#     removed before every run so that it parses the text as Sampan does;
#   - per run: wall seconds end to end (read, parse, train, evaluate, write
#     the model), peak RSS, test AUC; and the training time alone (Sampan's
#     examples/s; xLearn's per-epoch times from its log).
# Prints one line per run and the medians with their ratios.
#
#   XLEARN=/tmp/xlearn/build/xlearn_train ROWS=1000000 VOCAB=20 EPOCHS=1 \
#     THREADS=2 REPS=3 bench/fm_peer_bench.sh
set -euo pipefail

SAMPAN=${SAMPAN:-bazel-bin/cli/sampan}
XLEARN=${XLEARN:?path to xlearn_train (see ../shared/tools/build-xlearn.sh)}
ROWS=${ROWS:-1000000}
VOCAB=${VOCAB:-20}
EPOCHS=${EPOCHS:-1}
THREADS=${THREADS:-2}
REPS=${REPS:-3}
WORK=${WORK:-/tmp/sampan-fm-peer}

mkdir -p "$WORK"
data="$WORK/data-$ROWS-$VOCAB"
if [ ! -f "$data/done" ]; then
  "$SAMPAN" gen-data --out="$data" --rows="$ROWS" --seed=3 \
    --test_fraction=0.2 --vocab_scale="$VOCAB" >&2
  python3 bench/criteo_to_libffm.py < "$data/train.tsv" > "$data/train.ffm"
  python3 bench/criteo_to_libffm.py < "$data/test.tsv" > "$data/test.ffm"
  touch "$data/done"
fi
signs=$(cut -f2-40 "$data/train.tsv" | awk -F'\t' '{ for (i = 1; i <= NF; ++i)
  if ($i != "") print i ":" $i }' | sort -u | wc -l)
echo "data: $ROWS rows (80% train), vocab_scale $VOCAB, $signs distinct training signs" >&2

cat > "$WORK/fm.yaml" <<YAML
name: fm-peer
output_dir: $WORK/out
cluster: {num_pservers: 1, num_trainers: 1, threads_per_trainer: $THREADS}
model: {type: FM, embedding_dim: 8}
table: {num_shards: 64}
data:
  format: CRITEO_TSV
  train_files: [$data/train.tsv]
  test_files: [$data/test.tsv]
  batch_size: 2048
  epochs: $EPOCHS
  synthetic: {rows: 0}
YAML

# "wall_s rss_mb auc train_s" of one run.
run_sampan() {
  /usr/bin/time -f "%e %M" -o "$WORK/time" "$SAMPAN" train-local \
    "$WORK/fm.yaml" > "$WORK/sampan.log" 2>&1
  local auc eps
  auc=$(sed -n 's/^test_auc=//p' "$WORK/out/result.txt")
  eps=$(sed -n 's/^examples_per_second=//p' "$WORK/out/result.txt")
  read -r wall rss < "$WORK/time"
  awk -v w="$wall" -v r="$rss" -v a="$auc" -v e="$eps" -v n="$ROWS" \
    -v ep="$EPOCHS" 'BEGIN { printf "%.2f %.0f %.4f %.2f\n", w, r / 1024, a,
      n * 0.8 * ep / e }'
}
run_xlearn() {
  rm -f "$data"/*.bin
  (cd "$WORK" && USER=${USER:-root} /usr/bin/time -f "%e %M" -o "$WORK/time" \
    "$XLEARN" "$data/train.ffm" -s 1 -k 8 -e "$EPOCHS" -nthread "$THREADS" \
    -v "$data/test.ffm" -x auc -m "$WORK/xlearn.model" > "$WORK/xlearn.log" 2>&1)
  local auc train epochs
  # Epoch lines, colours stripped: "[ 100%] N train_loss test_loss auc seconds".
  epochs=$(sed 's/\x1b\[[0-9;]*m//g' "$WORK/xlearn.log" | grep -E '^\[ *[0-9]+%')
  auc=$(echo "$epochs" | tail -1 | awk '{ print $(NF-1) }')
  train=$(echo "$epochs" | awk '{ s += $NF } END { print s }')
  read -r wall rss < "$WORK/time"
  awk -v w="$wall" -v r="$rss" -v a="$auc" -v t="$train" \
    'BEGIN { printf "%.2f %.0f %.4f %.2f\n", w, r / 1024, a, t }'
}

: > "$WORK/sampan.runs"
: > "$WORK/xlearn.runs"
for rep in $(seq "$REPS"); do
  s=$(run_sampan); echo "$s" >> "$WORK/sampan.runs"; echo "run $rep sampan: $s" >&2
  x=$(run_xlearn); echo "$x" >> "$WORK/xlearn.runs"; echo "run $rep xlearn: $x" >&2
done

median() {  # file column
  sort -g -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END {
    print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
for c in 1 2 3 4; do
  sm[$c]=$(median "$WORK/sampan.runs" $c)
  xm[$c]=$(median "$WORK/xlearn.runs" $c)
done
awk -v sw="${sm[1]}" -v sr="${sm[2]}" -v sa="${sm[3]}" -v st="${sm[4]}" \
    -v xw="${xm[1]}" -v xr="${xm[2]}" -v xa="${xm[3]}" -v xt="${xm[4]}" \
    -v e="$EPOCHS" -v t="$THREADS" 'BEGIN {
  printf "FM, %d epoch(s), %d threads, medians:\n", e, t
  printf "  end to end  sampan %.2f s  xlearn %.2f s  ratio %.2f\n", sw, xw, sw / xw
  printf "  training    sampan %.2f s  xlearn %.2f s  ratio %.2f\n", st, xt, st / xt
  printf "  peak RSS    sampan %.0f MB  xlearn %.0f MB  ratio %.2f\n", sr, xr, sr / xr
  printf "  test AUC    sampan %.4f  xlearn %.4f\n", sa, xa
}'
