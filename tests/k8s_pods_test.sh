#!/usr/bin/env bash
# The rendered Kubernetes objects run, not just parse: `sampan render` +
# `kubectl kustomize`, then tests/k8s_pods.py starts every pod's containers
# (command, args, env, volumes, init containers) as local processes on
# loopback with Service names mapped, and the trainer Job must complete
# with a trained model.
set -euo pipefail

RUNFILES="${TEST_SRCDIR}/${TEST_WORKSPACE}"
SAMPAN="$RUNFILES/cli/sampan"
TMP="${TEST_TMPDIR}"
command -v kubectl > /dev/null || { echo "FAIL: kubectl missing (scripts/install-deps.sh installs it)"; exit 1; }

cat > "$TMP/job.yaml" <<'YAML'
name: pods-test
output_dir: /tmp/unused-by-pods
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 2,
          wait_timeout_seconds: 60}
model: {type: FM, embedding_dim: 8}
table: {num_shards: 16}
data:
  batch_size: 1024
  synthetic: {rows: 100000, seed: 3, test_fraction: 0.1}
kubernetes: {trainer: {cpu_request: "1"}, pserver_storage: 1Gi}
YAML
"$SAMPAN" render "$TMP/job.yaml" --target=k8s -o "$TMP/rendered"
kubectl kustomize "$TMP/rendered" > "$TMP/objects.yaml"
mkdir -p "$TMP/pods"
python3 "$RUNFILES/tests/k8s_pods.py" "$TMP/objects.yaml" "$SAMPAN" "$TMP/pods"
