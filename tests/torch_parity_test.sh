#!/usr/bin/env bash
# Quality parity guard (issue 26): `sampan train-local` LR and FM (1 thread,
# so a run is deterministic) on 20,000 generator rows, last 10% held out,
# must score within 0.002 AUC and logloss of what PyTorch reached with the
# same features, initialisation and row-wise Adagrad (bench/torch_ctr.py,
# recorded 2026-12-03: LR 0.7458 / 0.5290, FM 0.7458 / 0.5288). Where
# Debian's python3-torch is installed the reference also runs here, live.
set -uo pipefail

TESTLIB="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
[ -f "$TESTLIB" ] || TESTLIB="$(dirname "$0")/job_testlib.sh"
source "$TESTLIB"
REF="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/bench/torch_ctr.py"
[ -f "$REF" ] || REF="$(dirname "$0")/../bench/torch_ctr.py"

"$SAMPAN" gen-data --out="$TMP/data" --rows=20000 --seed=21 --test_fraction=0 \
  > /dev/null || { fail "gen-data"; finish; }

within() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d <= 0.002 && d >= -0.002) }'; }

for m in lr:0.7458:0.5290 fm:0.7458:0.5288; do
  IFS=: read -r model ref_auc ref_ll <<< "$m"
  cat > "$TMP/$model.yaml" <<YAML
name: parity-$model
output_dir: $TMP/$model
cluster: {threads_per_trainer: 1}
model: {type: $(tr a-z A-Z <<< "$model"), embedding_dim: 8}
table: {optimizer: {type: ADAGRAD, learning_rate: 0.05}}
data:
  format: CRITEO_TSV
  train_files: [$TMP/data/train.tsv]
  holdout_fraction: 0.1
  batch_size: 1024
  synthetic: {rows: 0}
YAML
  line=$("$SAMPAN" train-local "$TMP/$model.yaml" 2>&1 | grep '^test AUC')
  auc=$(awk '{ print $3 }' <<< "$line"); ll=$(awk '{ print $5 }' <<< "$line")
  if [ -n "$auc" ] && within "$auc" "$ref_auc" && within "$ll" "$ref_ll"; then
    pass "$model: AUC $auc logloss $ll (PyTorch recorded $ref_auc / $ref_ll)"
  else
    fail "$model: '$line', PyTorch recorded $ref_auc / $ref_ll"
  fi
  if /usr/bin/python3 -c 'import torch' 2> /dev/null; then
    live=$(/usr/bin/python3 "$REF" --data="$TMP/data/train.tsv" --model="$model" --threads=1)
    t_auc=$(sed -E 's/.*auc=([0-9.]+).*/\1/' <<< "$live")
    [ -n "$auc" ] && within "$auc" "$t_auc" \
      && pass "$model: PyTorch here: AUC $t_auc" || fail "$model: PyTorch here: $live"
  else
    echo "SKIP: no python3-torch here: $model's live PyTorch run did not run (its recorded figures were checked)"
  fi
done
finish
