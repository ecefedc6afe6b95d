#!/usr/bin/env bash
# Word vectors on the Brown corpus against Debian's fastText, side by side in
# one run (skip-gram, dim 100, window 5, 5 negatives, 5 epochs, min_count 5,
# subsampling 1e-4, step size 0.05; fastText with -minn 0 -maxn 0):
#   1. ROUNDS rounds, each alternating: fastText (2 threads), `sampan
#      train-local` (2 threads, lines shuffled every epoch), `sampan run`
#      (2 pservers + 2 trainers x 1 thread, each trainer its half of the
#      file). Words/s per thread and WordSim353 Spearman (`sampan
#      similarity` scores both sides' vectors);
#   2. staleness: train-local, 2 threads, data.batch_size (lines a step)
#      16 / 64 / 256 / 1024, seeds 1..3: Spearman and words/s per thread.
# Words/s counts every token read (fastText's words/sec/thread counts the
# same). Prints one line per run, then the medians and ratios.
#
#   SAMPAN_DATA_DIR=/work/shared/data ROUNDS=3 bench/word2vec_bench.sh
#   # ~8 min on 2 cores (needs `apt-get install fasttext`)
set -euo pipefail
SAMPAN=${SAMPAN:-bazel-bin/cli/sampan}
TEXT="${SAMPAN_DATA_DIR:?set SAMPAN_DATA_DIR}/text"
ROUNDS=${ROUNDS:-3}
PARTS=${PARTS:-peer staleness}
WORK=${WORK:-/tmp/sampan-word2vec-bench}
mkdir -p "$WORK"
command -v fasttext > /dev/null || {
  echo "fasttext not found: apt-get install fasttext" >&2
  exit 1
}

config() {  # name batch threads seed
  sed -e "s#output_dir: .*#output_dir: $WORK/$1#" \
    -e "s#\.\./shared/data/text#$TEXT#g" \
    -e "s/batch_size: 256/batch_size: $2/" \
    -e "s/threads_per_trainer: 1/threads_per_trainer: $3/" \
    -e "s/subsample: 0.0001/subsample: 0.0001\n    seed: $4/" \
    configs/word2vec-brown.yaml > "$WORK/$1.yaml"
}
spearman() { sed -n 's/^spearman=//p' "$WORK/$1/result.txt"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

if [[ " $PARTS " == *" peer "* ]]; then
  : > "$WORK/peer.tsv"
  for round in $(seq 1 "$ROUNDS"); do
    ft=$(fasttext skipgram -input "$TEXT/brown.txt" -output "$WORK/ft" \
      -dim 100 -ws 5 -neg 5 -epoch 5 -minCount 5 -minn 0 -maxn 0 \
      -thread 2 -t 1e-4 -lr 0.05 -seed "$round" 2>&1 | tr '\r' '\n' |
      grep -o 'words/sec/thread: *[0-9]*' | tail -1 | grep -o '[0-9]*$')
    s=$("$SAMPAN" similarity "$WORK/ft.vec" "$TEXT/wordsim353.tsv" |
        awk '{ print $2 }')
    echo -e "fasttext\t$ft\t$s" | tee -a "$WORK/peer.tsv"

    config local 256 2 "$round"
    out=$("$SAMPAN" train-local "$WORK/local.yaml" 2>&1)
    w=$(grep -o '[0-9]* words/s per thread' <<< "$out" | cut -d' ' -f1)
    echo -e "train-local\t$w\t$(spearman local)" | tee -a "$WORK/peer.tsv"

    # The preset's 256 lines a step, and 1024 (fewer, larger pulls).
    for batch in 256 1024; do
      name=run; [ "$batch" = 256 ] || name=run$batch
      config "$name" "$batch" 1 "$round"
      rm -rf "${WORK:?}/$name"
      "$SAMPAN" run "$WORK/$name.yaml" > "$WORK/$name.out" 2>&1
      # Each trainer is one thread: its words/s is words/s per thread.
      w=$(grep -ho '[0-9]* words/s$' "$WORK/$name"/logs/trainer-*.log |
          cut -d' ' -f1 | median)
      echo -e "$name\t$w\t$(spearman "$name")" | tee -a "$WORK/peer.tsv"
    done
  done
  echo "medians over $ROUNDS rounds (words/s per thread, Spearman):"
  for who in fasttext train-local run run1024; do
    w=$(awk -v k="$who" '$1 == k { print $2 }' "$WORK/peer.tsv" | median)
    s=$(awk -v k="$who" '$1 == k { print $3 }' "$WORK/peer.tsv" | median)
    echo -e "  $who\t$w\t$s"
    eval "w_${who//-/_}=$w; s_${who//-/_}=$s"
  done
  awk -v f="$w_fasttext" -v l="$w_train_local" -v r="$w_run" \
    -v r4="$w_run1024" -v sf="$s_fasttext" -v sl="$s_train_local" \
    -v sr="$s_run" -v sr4="$s_run1024" 'BEGIN {
    printf "train-local / fastText words/s per thread: %.2fx, Spearman %+.4f\n", l / f, sl - sf
    printf "run (2 trainers) / train-local (2 threads) words/s: %.2fx, Spearman %+.4f (vs fastText %+.4f)\n", r / l, sr - sl, sr - sf
    printf "run, 1024 lines a step / train-local: %.2fx, Spearman %+.4f (vs fastText %+.4f)\n", r4 / l, sr4 - sl, sr4 - sf }'
fi

if [[ " $PARTS " == *" staleness "* ]]; then
  echo "staleness: train-local, 2 threads (batch, seed, words/s per thread, Spearman)"
  : > "$WORK/stale.tsv"
  for seed in 1 2 3; do
    for batch in 16 64 256 1024; do
      config stale "$batch" 2 "$seed"
      out=$("$SAMPAN" train-local "$WORK/stale.yaml" 2>&1)
      w=$(grep -o '[0-9]* words/s per thread' <<< "$out" | cut -d' ' -f1)
      echo -e "$batch\t$seed\t$w\t$(spearman stale)" | tee -a "$WORK/stale.tsv"
    done
  done
  echo "medians by batch (words/s per thread, Spearman):"
  for batch in 16 64 256 1024; do
    w=$(awk -v b="$batch" '$1 == b { print $3 }' "$WORK/stale.tsv" | median)
    s=$(awk -v b="$batch" '$1 == b { print $4 }' "$WORK/stale.tsv" | median)
    echo -e "  $batch\t$w\t$s"
  done
fi
