#!/usr/bin/env bash
# The rendered Kubernetes objects run, not just parse: `sampan render` +
# `kubectl kustomize`, then tests/k8s_pods.py starts every pod's containers
# (command, args, env, volumes, init containers) as local processes on
# loopback with Service names mapped (an `insecure` job), and the trainer
# Job must complete with a trained model. Then a job with TLS, a token and
# checkpoints, as a cluster would run it: render refuses it without shared
# storage (exit 2, naming the fields); with kubernetes.checkpoint_storage
# every pod mounts one ReadWriteMany claim (a shared directory here) and the
# Secret scripts/make-certs.sh makes; each pod runs in a network namespace
# of its own on a non-loopback address, dialing the others by their DNS
# names (which the certificate names) over TLS with the token, /metrics
# scraped as the ServiceMonitor says; checkpoints land on the claim, and a
# trainer pod killed after the first one is replaced and resumes at its
# checkpointed position.
set -euo pipefail

RUNFILES="${TEST_SRCDIR}/${TEST_WORKSPACE}"
SAMPAN="$RUNFILES/cli/sampan"
TMP="${TEST_TMPDIR}"
command -v kubectl > /dev/null || { echo "FAIL: kubectl missing (scripts/install-deps.sh installs it)"; exit 1; }

cat > "$TMP/job.yaml" <<'YAML'
name: pods-test
output_dir: /tmp/unused-by-pods
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 2,
          wait_timeout_seconds: 60, security: {insecure: true}}
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

echo "--- a job with TLS, a token and checkpoints"
cat > "$TMP/ckpt.yaml" <<'YAML'
name: pods-ckpt
output_dir: /tmp/unused-by-pods
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 60}
model: {type: LR}
table: {num_shards: 16, backend: ROCKSDB}
data:
  batch_size: 256
  synthetic: {rows: 200000, seed: 3, test_fraction: 0.1}
checkpoint: {every_steps: 40, timeout_seconds: 10}
kubernetes: {pserver_storage: 1Gi, tls_secret: pods-ckpt-tls}
YAML
set +e
out=$("$SAMPAN" render "$TMP/ckpt.yaml" --target=k8s -o "$TMP/refused" 2>&1); rc=$?
set -e
if [ $rc -ne 2 ] || ! grep -q "kubernetes.checkpoint_claim or kubernetes.checkpoint_storage" <<< "$out"; then
  echo "FAIL: render of a checkpointing job without shared storage: rc=$rc $out"; exit 1
fi
echo "ok: refused without shared storage (exit 2): ${out%%;*}"
sed -i 's/^kubernetes: {pserver_storage: 1Gi, /kubernetes: {pserver_storage: 1Gi, checkpoint_storage: 1Gi, /' "$TMP/ckpt.yaml"
# The Secret: what scripts/make-certs.sh makes for this job.
SAMPAN="$SAMPAN" bash "$RUNFILES/scripts/make-certs.sh" "$TMP/ckpt.yaml" "$TMP/pki" > "$TMP/pki.log"
mkdir -p "$TMP/secret"
cp "$TMP"/pki/{tls.crt,tls.key,ca.crt,token} "$TMP/secret/"
# On a cluster pods have addresses of their own, where Sampan's servers
# refuse to listen without TLS and a token: run them so, each pod in a
# network namespace on 10.88.0.N with the job's names in its /etc/hosts,
# inside a network and mount namespace of this test's own (nothing of the
# host's network changes). That needs root (CI runs as root); without it
# the same pods run on loopback addresses, plaintext, and the test says
# SKIP (tests/skipped.sh lists it; CI fails on it).
if [ "$(id -u)" -eq 0 ] && unshare -n -m true 2> /dev/null; then
  "$SAMPAN" render "$TMP/ckpt.yaml" --target=k8s -o "$TMP/ckpt-rendered"
  kubectl kustomize "$TMP/ckpt-rendered" > "$TMP/ckpt-objects.yaml"
  mkdir -p "$TMP/ckpt-pods"
  unshare -n -m --propagation private -- bash -c '
    mkdir -p /etc/netns && mount -t tmpfs sampan-pods /etc/netns &&
    exec python3 "$@"' k8s-pods "$RUNFILES/tests/k8s_pods.py" \
    "$TMP/ckpt-objects.yaml" "$SAMPAN" "$TMP/ckpt-pods" --replace-trainer=1 \
    --netns --secret=pods-ckpt-tls="$TMP/secret"
else
  echo "SKIP: pods on non-loopback addresses with TLS need root and network namespaces (uid $(id -u)); ran them on loopback, plaintext"
  sed -i 's/^cluster: {/cluster: {security: {insecure: true}, /; s/, tls_secret: pods-ckpt-tls//' "$TMP/ckpt.yaml"
  "$SAMPAN" render "$TMP/ckpt.yaml" --target=k8s -o "$TMP/ckpt-rendered"
  kubectl kustomize "$TMP/ckpt-rendered" > "$TMP/ckpt-objects.yaml"
  mkdir -p "$TMP/ckpt-pods"
  python3 "$RUNFILES/tests/k8s_pods.py" "$TMP/ckpt-objects.yaml" "$SAMPAN" \
    "$TMP/ckpt-pods" --replace-trainer=1
fi
shared="$TMP/ckpt-pods/claims/pods-ckpt-checkpoints/pods-ckpt"
latest=$(ls -d "$shared"/ckpt-*/MANIFEST 2>/dev/null | sort -V | tail -1)
[ -n "$latest" ] || { echo "FAIL: no complete checkpoint in the shared claim $shared"; ls -R "$TMP/ckpt-pods" | head -40; exit 1; }
dir=$(dirname "$latest")
for i in 0 1; do
  [ -d "$dir/pserver-$i" ] || { echo "FAIL: $dir lacks pserver-$i's snapshot"; exit 1; }
done
# Nothing went to a pod's own volume instead.
stray=$(find "$TMP/ckpt-pods" -path "$shared" -prune -o -name 'ckpt-[0-9]*' -print)
[ -z "$stray" ] || { echo "FAIL: checkpoints outside the shared claim: $stray"; exit 1; }
echo "ok: $(ls -d "$shared"/ckpt-* | wc -l) checkpoint(s) in the shared claim; latest $(basename "$dir") has pserver-0, pserver-1 and a MANIFEST"
