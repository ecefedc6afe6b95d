#!/usr/bin/env bash
# Quality parity with a reference framework (issue 26): Sampan's
# `train-local` and bench/torch_ctr.py (PyTorch, the same features,
# initialisation and row-wise Adagrad) train the same model on the same rows
# and threads, alternately, ROUNDS times; prints each run's test AUC,
# logloss and training examples/s, then the medians and their ratios.
#
# Usage: bench/torch_parity.sh MODEL THREADS [ROUNDS] [DATA]
#   MODEL: lr, fm, deepfm or dcn; THREADS: 1 or 2 (both sides); ROUNDS: 3.
#   DATA: a Criteo TSV (.gz); default ../shared/data's Criteo 137k sample,
#   whose last 10% is the test set.
# Env: DIM (8), LR (0.05), BATCH (1024), EPOCHS (1), INT (buckets|both),
#   EMPTY (1: empty fields are signs), MIN_COUNT (0), DENSE_LR (Adam's,
#   0.01; 0.001 for deepfm/dcn), HIDDEN (400,400,400), INIT (rows' v
#   range, 0.01), MODE (model.mode for Sampan's deep models: HYBRID, the
#   default, steps the threads together; ASYNC is Hogwild), RUN (1: Sampan's
#   side is `sampan run`, 2 pservers and THREADS trainers of one thread
#   each, in MODE; both sides read the file unzipped, which the trainers
#   split by bytes; its examples/s is the training rows over the whole
#   run's wall time, start-up and final scoring included), STYLE (mirror:
#   the hand-written row-wise reference; idiomatic, LR/FM only: PyTorch's
#   sparse nn.Embedding and stock Adagrad, the same math), SAMPAN
#   (bazel-bin/cli/sampan). Needs Debian's python3-torch (/usr/bin/python3).
set -euo pipefail
model=${1:?lr, fm, deepfm or dcn}; threads=${2:?threads}; rounds=${3:-3}
data=${4:-../shared/data/criteo/criteo_kaggle_137k.tsv.gz}
SAMPAN=${SAMPAN:-bazel-bin/cli/sampan}
DIM=${DIM:-8}; LR=${LR:-0.05}; BATCH=${BATCH:-1024}; EPOCHS=${EPOCHS:-1}
INT=${INT:-buckets}; EMPTY=${EMPTY:-0}; MIN_COUNT=${MIN_COUNT:-0}
HIDDEN=${HIDDEN:-400,400,400}; INIT=${INIT:-0.01}
case $model in
  lr | fm) type=$(tr a-z A-Z <<< "$model"); DENSE_LR=${DENSE_LR:-0.01} ;;
  deepfm) type=DEEPFM; DENSE_LR=${DENSE_LR:-0.001} ;;
  dcn) type=DCN_V2; DENSE_LR=${DENSE_LR:-0.001} ;;
  *) echo "MODEL: lr, fm, deepfm or dcn"; exit 2 ;;
esac
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
  { echo "needs python3-torch (apt-get install python3-torch)"; exit 2; }
work=$(mktemp -d /tmp/torch-parity.XXXXXX)
trap 'rm -rf "$work"' EXIT

cluster="{threads_per_trainer: $threads}"
if [ "${RUN:-0}" = 1 ]; then
  zcat -f "$data" > "$work/data.tsv"
  data=$work/data.tsv
  cluster="{num_pservers: 2, num_trainers: $threads, threads_per_trainer: 1}"
fi
case $INT in
  buckets) ints=BUCKETS ;;
  both) ints=BUCKETS_AND_LOG_DENSE ;;
  *) echo "INT: buckets or both"; exit 2 ;;
esac
cat > "$work/job.yaml" <<YAML
name: parity
output_dir: $work/out
cluster: $cluster
model: {type: $type, embedding_dim: $DIM, hidden: [$HIDDEN], seed: @SEED@,${MODE:+ mode: $MODE,}
        dense_optimizer: {type: ADAM, learning_rate: $DENSE_LR}}
table: {optimizer: {type: ADAGRAD, learning_rate: $LR, init_range: $INIT}}
data:
  format: CRITEO_TSV
  train_files: [$(realpath "$data")]
  holdout_fraction: 0.1
  batch_size: $BATCH
  epochs: $EPOCHS
  validation_fraction: 0
  integer_features: $ints
  empty_field_signs: $([ "$EMPTY" = 1 ] && echo true || echo false)
  min_feature_count: $MIN_COUNT
  synthetic: {rows: 0}
YAML
torch_flags=(--data="$data" --model="$model" --dim="$DIM" --lr="$LR"
  --batch="$BATCH" --epochs="$EPOCHS" --threads="$threads" --int="$INT"
  --min_count="$MIN_COUNT" --dense_lr="$DENSE_LR" --hidden="$HIDDEN"
  --init="$INIT" --style="${STYLE:-mirror}")
[ "$EMPTY" = 1 ] && torch_flags+=(--empty)

: > "$work/sampan.txt"; : > "$work/torch.txt"
for r in $(seq 1 "$rounds"); do
  # Round r seeds both sides' dense initialisation (and torch's rows) with r.
  sed "s/@SEED@/$r/" "$work/job.yaml" > "$work/job-$r.yaml"
  if [ "${RUN:-0}" = 1 ]; then
    rm -rf "$work/out"
    start=$(date +%s.%N)
    "$SAMPAN" run "$work/job-$r.yaml" > "$work/run.log" 2>&1 ||
      { tail -5 "$work/run.log"; exit 1; }
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    auc=$(sed -n 's/^test_auc=//p' "$work/out/result.txt")
    ll=$(sed -n 's/^test_logloss=//p' "$work/out/result.txt")
    rows=$(awk -v n="$(wc -l < "$data")" 'BEGIN { printf "%d", n * 0.9 }')
    eps=$(awk -v r="$rows" -v s="$seconds" 'BEGIN { printf "%.0f", r / s }')
    echo "round $r sampan run: test AUC $auc logloss $ll in $seconds s ($eps examples/s)"
    echo "$auc $ll $eps" >> "$work/sampan.txt"
  else
    line=$("$SAMPAN" train-local "$work/job-$r.yaml" --curve_points=0 2>/dev/null |
      grep '^test AUC')
    echo "round $r sampan: $line"
    awk '{ print $3, $5, $(NF - 1) }' <<< "$line" >> "$work/sampan.txt"
  fi
  line=$(/usr/bin/python3 bench/torch_ctr.py "${torch_flags[@]}" --seed="$r")
  echo "round $r torch:  $line"
  sed -E 's/.*auc=([0-9.]+) logloss=([0-9.]+).*examples_per_second=([0-9.]+).*/\1 \2 \3/' \
    <<< "$line" >> "$work/torch.txt"
done
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
for side in sampan torch; do
  auc=$(cut -d' ' -f1 "$work/$side.txt" | median)
  ll=$(cut -d' ' -f2 "$work/$side.txt" | median)
  eps=$(cut -d' ' -f3 "$work/$side.txt" | median)
  eval "${side}_auc=$auc ${side}_ll=$ll ${side}_eps=$eps"
  printf '%-6s median: AUC %s  logloss %s  %s examples/s\n' "$side" "$auc" "$ll" "$eps"
done
awk -v a="$sampan_auc" -v b="$torch_auc" -v x="$sampan_eps" -v y="$torch_eps" \
  'BEGIN { printf "sampan - torch: AUC %+.4f; speed %.2fx\n", a - b, x / y }'
