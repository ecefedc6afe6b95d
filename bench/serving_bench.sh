#!/usr/bin/env bash
# `sampan serve` figures (issue 18): throughput and latency of Predict over
# loopback gRPC for requests of 1 and 100 examples, FM and DeepFM 3x400
# (dim 16, 39 Criteo fields), against the in-process limit (the same
# requests' batches scored by ScoreBatch on the same model, no RPC) measured
# alternately in the same run; REPS repetitions, medians reported. See
# bench/serving_bench.cc for what each run does.
# Usage: bench/serving_bench.sh [ROWS] [REPS]
# Environment: MODELS ("FM DEEPFM"), SIZES (1,100), FORMS (examples,lines),
# CLIENTS (4), SECONDS_PER_RUN (5), WARMUP (1), DIST (zipf), POOL (examples
# drawn, 50000), PREWARM (seconds of uncounted calls first, 0), DIR, and
# SERVING: a text-format ServingConfig merged into the served job, e.g. the
# RocksDB-backed store 4x over its memory budget:
#   POOL=1000000 PREWARM=60 SERVING='store_dir:
#   "/tmp/sampan-serving-bench/store20m" memory_budget_mb: 340'
#   bench/serving_bench.sh 20000000
# SHARDS=N (N > 1) also starts N lookup shards and a predictor front end on
# the same model (SHARD_SERVING: their ServingConfig fields, default
# memory_budget_mb: 256) and runs them after the one-process server in
# every rep: the cost of sharding on loopback.
# The model directory and the store are kept in DIR and reused while the
# model is the same (a rerun of the 20M case skips its ~80 s of writing and
# loading). A larger POOL draws more distinct keys: the 50,000 default
# examples touch fewer rows than a store's hot tier holds.
# Prints each run, then one RESULT line per model, size and form; the load
# average before and after (2 shared cores: other work skews the figures).
set -euo pipefail
ROWS=${1:-1000000}
REPS=${2:-3}
MODELS=${MODELS:-FM DEEPFM}
DIR=${DIR:-/tmp/sampan-serving-bench}
bazel build --disk_cache=/tmp/bazel-disk //cli:sampan //bench:serving_bench
mkdir -p "$DIR"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for model in $MODELS; do
  bazel-bin/bench/serving_bench --model="$model" --rows="$ROWS" \
    --reps="$REPS" --sizes="${SIZES:-1,100}" --forms="${FORMS:-examples,lines}" \
    --clients="${CLIENTS:-4}" --seconds="${SECONDS_PER_RUN:-5}" \
    --warmup="${WARMUP:-1}" --dist="${DIST:-zipf}" --pool="${POOL:-50000}" \
    --prewarm="${PREWARM:-0}" \
    --shards="${SHARDS:-0}" --shard_serving="${SHARD_SERVING:-memory_budget_mb: 256}" \
    --dir="$DIR" \
    --serving="${SERVING:-}" --sampan=bazel-bin/cli/sampan \
    | tee "$DIR/$model.out"
  echo "load after $model: $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo
grep -h '^RESULT' $(for m in $MODELS; do echo "$DIR/$m.out"; done)
