#!/usr/bin/env bash
# `sampan serve` figures (issue 18): throughput and latency of Predict over
# loopback gRPC for requests of 1 and 100 examples, FM and DeepFM 3x400
# (dim 16, 39 Criteo fields), against the in-process limit (the same
# requests' batches scored by ScoreBatch on the same model, no RPC) measured
# alternately in the same run; REPS repetitions, medians reported. See
# bench/serving_bench.cc for what each run does.
# Usage: bench/serving_bench.sh [ROWS] [REPS]
# Environment: MODELS ("FM DEEPFM"), SIZES (1,100), FORMS (examples,lines),
# CLIENTS (4), SECONDS_PER_RUN (5), WARMUP (1), DIST (zipf), DIR, and SERVING: a
# text-format ServingConfig merged into the served job, e.g. the memory
# budget of the RocksDB-backed store for the 20M-row case, once it exists:
#   SERVING='<its budget field>: ...' bench/serving_bench.sh 20000000
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
    --warmup="${WARMUP:-1}" --dist="${DIST:-zipf}" --dir="$DIR" \
    --serving="${SERVING:-}" --sampan=bazel-bin/cli/sampan \
    | tee "$DIR/$model.out"
  echo "load after $model: $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo
grep -h '^RESULT' $(for m in $MODELS; do echo "$DIR/$m.out"; done)
