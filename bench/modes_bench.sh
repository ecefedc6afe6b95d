#!/usr/bin/env bash
# model.mode on real data: `sampan run` DeepFM (dim 8, MLP 400x400, Adam
# 3e-4 dense, Adagrad 0.02 / l2 0.1 rows, batch 256), 2 trainers x 1 thread,
# 2 pservers, one pass over the first 90% of criteo_kaggle_137k, test on the
# last 10%; SYNC, HYBRID and ASYNC in turn, REPS times. Prints one line per
# run: rep, mode, test AUC, logloss, wall seconds, load average.
# Usage: SAMPAN_DATA_DIR=/work/shared/data REPS=3 bench/modes_bench.sh
set -euo pipefail
SAMPAN="${SAMPAN:-bazel-bin/cli/sampan}"
DATA="${SAMPAN_DATA_DIR:?set SAMPAN_DATA_DIR}/criteo/criteo_kaggle_137k.tsv.gz"
TMP="${TMP_DIR:-$(mktemp -d)}"
zcat "$DATA" > "$TMP/all.tsv"
n=$(wc -l < "$TMP/all.tsv"); k=$((n - n / 10))
head -n "$k" "$TMP/all.tsv" > "$TMP/train.tsv"
tail -n +"$((k + 1))" "$TMP/all.tsv" > "$TMP/test.tsv"
for rep in $(seq "${REPS:-3}"); do
  for mode in SYNC HYBRID ASYNC; do
    cat > "$TMP/$mode.yaml" <<YAML
name: modes-$mode
output_dir: $TMP/out-$mode
progress_interval_seconds: 10
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 300, heartbeat_timeout_seconds: 60}
model: {type: DEEPFM, embedding_dim: 8, hidden: [400, 400], mode: $mode,
        dense_optimizer: {type: ADAM, learning_rate: 0.0003}}
table: {num_shards: 32, optimizer: {type: ADAGRAD, learning_rate: 0.02, l2: 0.1}}
data: {format: CRITEO_TSV, batch_size: 256, synthetic: {rows: 0},
       train_files: [$TMP/train.tsv], test_files: [$TMP/test.tsv]}
YAML
    start=$(date +%s.%N)
    "$SAMPAN" run "$TMP/$mode.yaml" > "$TMP/$mode.log" 2>&1
    end=$(date +%s.%N)
    echo "$rep $mode $(sed -n 's/^test_auc=//p' "$TMP/out-$mode/result.txt")" \
      "$(sed -n 's/^test_logloss=//p' "$TMP/out-$mode/result.txt")" \
      "$(echo "$end - $start" | bc) s load $(cut -d' ' -f1 /proc/loadavg)"
  done
done
