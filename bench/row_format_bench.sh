#!/usr/bin/env bash
# Compact row formats (table.row_format) against FP32, in one run:
#   1. Criteo 137k, test = the last 10%: model_train_bench on 1 thread (so a
#      seed gives one result) of FM, DNN and DeepFM, each format in turn per
#      seed: FP32, FP16, INT8, INT8 with nearest rounding;
#   2. a large synthetic stream: `sampan run` (2 pservers, 2 trainers x 1
#      thread, memory tables) of an FM dim 16 over `sampan gen-data
#      --rows=$ROWS --vocab_scale=$VOCAB` (millions of distinct keys, rows
#      created throughout), FP32 / FP16 / INT8 alternated REPS times;
#   3. bytes per row: large_table_bench --phase=build of $BYTES_ROWS rows,
#      memory table (rows + index) and RocksDB (on disk), dims 8, 16, 64.
# One line per run; medians are taken by hand (bench/RESULTS.md).
#
#   SAMPAN_DATA_DIR=/work/shared/data SEEDS="1 2 3" REPS=3 ROWS=4000000 \
#     VOCAB=40 bench/row_format_bench.sh        # ~25 min on 2 cores
set -euo pipefail
SAMPAN=${SAMPAN:-bazel-bin/cli/sampan}
TRAIN=${TRAIN:-bazel-bin/bench/model_train_bench}
LARGE=${LARGE:-bazel-bin/bench/large_table_bench}
CRITEO="${SAMPAN_DATA_DIR:?set SAMPAN_DATA_DIR}/criteo/criteo_kaggle_137k.tsv.gz"
SEEDS=${SEEDS:-1 2 3}
REPS=${REPS:-3}
ROWS=${ROWS:-4000000}
VOCAB=${VOCAB:-40}
BYTES_ROWS=${BYTES_ROWS:-2000000}
WORK=${WORK:-/tmp/sampan-row-format}
PARTS=${PARTS:-criteo stream bytes}
mkdir -p "$WORK"

formats=("fp32 stochastic" "fp16 stochastic" "int8 stochastic" "int8 nearest")
pick() { grep -o "$1=[0-9.]*" | cut -d= -f2; }

if [[ " $PARTS " == *" criteo "* ]]; then
  for seed in $SEEDS; do
    for model in fm dnn deepfm; do
      for fr in "${formats[@]}"; do
        set -- $fr
        out=$("$TRAIN" --data="$CRITEO" --model="$model" --lr=0.02 \
          --min_count=5 --l2=0.1 --dense_lr=0.0003 --batch=256 \
          --hidden=400,400 --threads=1 --seed="$seed" --row_format="$1" \
          --rounding="$2" 2>/dev/null)
        echo "criteo $model $1-$2 seed=$seed auc=$(pick test_auc <<<"$out")" \
          "logloss=$(pick logloss <<<"$out")" \
          "examples_per_s=$(pick examples_per_s <<<"$out")"
      done
    done
  done
fi

if [[ " $PARTS " == *" stream "* ]]; then
  data="$WORK/data-$ROWS-$VOCAB"
  if [ ! -f "$data/done" ]; then
    "$SAMPAN" gen-data --out="$data" --rows="$ROWS" --seed=5 \
      --test_fraction=0.05 --vocab_scale="$VOCAB" >&2
    touch "$data/done"
  fi
  for rep in $(seq "$REPS"); do
    for f in FP32 FP16 INT8; do
      cat > "$WORK/$f.yaml" <<YAML
name: row-format-$f
output_dir: $WORK/out-$f
progress_interval_seconds: 30
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 600}
model: {type: FM, embedding_dim: 16}
table: {num_shards: 64, row_format: $f}
data: {format: CRITEO_TSV, batch_size: 2048, synthetic: {rows: 0},
       train_files: [$data/train.tsv], test_files: [$data/test.tsv]}
YAML
      rm -rf "$WORK/out-$f"
      start=$(date +%s.%N)
      "$SAMPAN" run "$WORK/$f.yaml" > "$WORK/$f.log" 2>&1
      end=$(date +%s.%N)
      echo "stream fm16 $f rep=$rep" \
        "auc=$(sed -n 's/^test_auc=//p' "$WORK/out-$f/result.txt")" \
        "logloss=$(sed -n 's/^test_logloss=//p' "$WORK/out-$f/result.txt")" \
        "wall_s=$(echo "$end - $start" | bc)" \
        "load=$(cut -d' ' -f1 /proc/loadavg)"
    done
  done
fi

if [[ " $PARTS " == *" bytes "* ]]; then
  for dim in 8 16 64; do
    for f in fp32 fp16 int8; do
      m=$("$LARGE" --case=memory --phase=build --rows="$BYTES_ROWS" \
        --dim="$dim" --row_format="$f" 2>/dev/null)
      r=$("$LARGE" --case=rocksdb --phase=build --rows="$BYTES_ROWS" \
        --dim="$dim" --row_format="$f" --budget_mb=256 \
        --dir="$WORK/table-$f" 2>/dev/null)
      rm -rf "$WORK/table-$f"
      echo "bytes dim=$dim $f" \
        "memory_bytes_per_row=$(pick memory_bytes_per_row <<<"$m")" \
        "disk_bytes_per_row=$(pick disk_bytes_per_row <<<"$r")"
    done
  done
fi
