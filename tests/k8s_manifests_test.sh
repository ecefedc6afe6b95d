#!/usr/bin/env bash
# Kubernetes objects, validated without a cluster:
#   1. every preset renders (one without a TLS Secret only once it is
#      `insecure`: render refuses it before, exit 2), `kubectl kustomize`
#      builds it, and every object passes the Kubernetes schemas (npm
#      kubernetes-models) and our strict unknown-field check
#      (deploy/validate/validate.js); so does a job with checkpoints, whose
#      shared claim every workload mounts;
#   2. so do deploy/base and both overlays, and deploy/base is what
#      `sampan render configs/k8s-demo.yaml` writes today;
#   3. the validator rejects an unknown field and a wrong type (it can fail);
#   4. `sampan submit` without a cluster fails clearly and applies nothing;
#   5. the Dockerfile's runtime stage installs every library the binary links;
#   6. servers advertise stable DNS names, and the certificate
#      scripts/make-certs.sh makes verifies for each of them (and no other)
#      on a real TLS pserver and its HTTPS /metrics.
set -uo pipefail

RUNFILES="${TEST_SRCDIR}/${TEST_WORKSPACE}"
SAMPAN="$RUNFILES/cli/sampan"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
for tool in kubectl node npm python3; do
  command -v $tool > /dev/null || { echo "FAIL: $tool missing (scripts/install-deps.sh installs it)"; exit 1; }
done

# The validator's node_modules come from the committed package-lock.json
# (npm's cache first; the npm registry only for what the cache lacks).
mkdir -p "$TMP/validate"
cp "$RUNFILES"/deploy/validate/{package.json,package-lock.json,validate.js} "$TMP/validate/"
if ! (cd "$TMP/validate" && npm ci --prefer-offline --no-audit --no-fund \
        --cache "${NPM_CACHE:-${HOME:-/root}/.npm}" > npm.log 2>&1); then
  echo "FAIL: npm ci for deploy/validate failed:"; tail -20 "$TMP/validate/npm.log"; exit 1
fi
validate() { node "$TMP/validate/validate.js" "$@"; }

# 1. Presets. Pods listen on their IPs, where servers refuse to start
# without TLS and a token: render refuses a preset with neither a TLS Secret
# nor cluster.security.insecure (exit 2, naming the fields), and renders it
# once it is insecure. A local stream preset has no shared volume for its
# versions, which Kubernetes pods need: render refuses it too and says so.
insecure_copy() {  # preset out: the preset with cluster.security.insecure
  python3 - "$1" "$2" <<'PY'
import sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
job.setdefault("cluster", {}).setdefault("security", {})["insecure"] = True
yaml.safe_dump(job, open(sys.argv[2], "w"))
PY
}
for preset in "$RUNFILES"/configs/*.yaml; do
  name=$(basename "$preset" .yaml)
  if ! grep -q "tls_secret:" "$preset"; then
    out=$("$SAMPAN" render "$preset" --target=k8s -o "$TMP/$name" 2>&1)
    rc=$?
    [ $rc -eq 2 ] && grep -q "kubernetes.tls_secret is not set" <<< "$out" \
      && grep -q "cluster.security.insecure: true" <<< "$out" \
      && pass "$name: refused without a TLS Secret or insecure" \
      || fail "$name without TLS: rc $rc: $out"
    insecure_copy "$preset" "$TMP/$name-insecure.yaml"
    preset="$TMP/$name-insecure.yaml"
  fi
  if [ "$name" = stream-demo ]; then
    out=$("$SAMPAN" render "$preset" --target=k8s -o "$TMP/$name" 2>&1)
    rc=$?
    [ $rc -eq 2 ] && grep -q "publishes model versions (data.stream)" <<< "$out" \
      && pass "$name: refused without a shared volume" \
      || fail "$name: rc $rc: $out"
    continue
  fi
  "$SAMPAN" render "$preset" --target=k8s -o "$TMP/$name" > /dev/null \
    || { fail "render $name"; continue; }
  kubectl kustomize "$TMP/$name" > "$TMP/$name.objects.yaml" \
    || { fail "kubectl kustomize $name"; continue; }
  out=$(validate "$TMP/$name.objects.yaml") && pass "$name: $out" || fail "$name: $out"
done

# 1b. A job with checkpoints: its ReadWriteMany claim (created, or an
# existing one by name) is mounted in every pod; the objects validate too.
for storage in "checkpoint_storage: 50Gi\\n  checkpoint_storage_class: nfs-client" \
               "checkpoint_claim: team-checkpoints"; do
  sed -e 's/^name: .*/name: ckpt-demo/' -e 's/^table:$/table:\n  backend: ROCKSDB/' \
      -e "s/^kubernetes:$/kubernetes:\n  $storage/" \
      "$RUNFILES/configs/k8s-demo.yaml" > "$TMP/ckpt.yaml"
  echo "checkpoint: {every_seconds: 300}" >> "$TMP/ckpt.yaml"
  name="ckpt-${storage%%:*}"
  "$SAMPAN" render "$TMP/ckpt.yaml" --target=k8s -o "$TMP/$name" > /dev/null \
    || { fail "render $name"; continue; }
  kubectl kustomize "$TMP/$name" > "$TMP/$name.objects.yaml" \
    || { fail "kubectl kustomize $name"; continue; }
  out=$(validate "$TMP/$name.objects.yaml") && pass "$name: $out" || fail "$name: $out"
  claims=$(python3 - "$TMP/$name.objects.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
rendered = {d["metadata"]["name"]: d["spec"]["accessModes"] for d in docs
            if d["kind"] == "PersistentVolumeClaim"}
mounted = set()
for d in docs:
    if d["kind"] in ("Deployment", "StatefulSet", "Job"):
        pod = d["spec"]["template"]["spec"]
        vols = {v["name"]: v for v in pod["volumes"]}
        for m in pod["containers"][0]["volumeMounts"]:
            if m["mountPath"] == "/var/lib/sampan-checkpoints":
                mounted.add((d["kind"], vols[m["name"]]["persistentVolumeClaim"]["claimName"]))
print(sorted(mounted), rendered)
PY
)
  case "$storage" in
    checkpoint_storage*) want="[('Deployment', 'ckpt-demo-checkpoints'), ('Job', 'ckpt-demo-checkpoints'), ('StatefulSet', 'ckpt-demo-checkpoints')] {'ckpt-demo-checkpoints': ['ReadWriteMany']}" ;;
    *) want="[('Deployment', 'team-checkpoints'), ('Job', 'team-checkpoints'), ('StatefulSet', 'team-checkpoints')] {}" ;;
  esac
  [ "$claims" = "$want" ] && pass "$name: every workload mounts its claim" \
    || fail "$name: claims $claims, want $want"
done

# 1c. A stream job with serving (configs/k8s-stream.yaml): versions on the
# shared claim that trainers and predictors mount; predictors ready only once
# a version is loaded (the ready file serve writes), alive on the port.
python3 - "$TMP/k8s-stream.objects.yaml" <<'PY' && pass "k8s-stream: predictors follow the shared versions" || fail "k8s-stream serving objects"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
dep = by[("Deployment", "stream-ctr-serving")]
assert dep["spec"]["replicas"] == 2, dep["spec"]["replicas"]
c = dep["spec"]["template"]["spec"]["containers"][0]
assert c["args"][:3] == ["serve", "/etc/sampan/job.yaml",
                         "--ready_file=/var/lib/sampan/serving.ready"], c["args"]
assert c["readinessProbe"]["exec"]["command"] == [
    "test", "-e", "/var/lib/sampan/serving.ready"], c["readinessProbe"]
assert "tcpSocket" in c["livenessProbe"], c["livenessProbe"]
mounts = {m["mountPath"] for m in c["volumeMounts"]}
assert "/var/lib/sampan-checkpoints" in mounts, mounts
assert ("Service", "stream-ctr-serving") in by
assert by[("PodDisruptionBudget", "stream-ctr-serving")]["spec"]["maxUnavailable"] == 1
job = yaml.safe_load([d for d in docs if d["kind"] == "ConfigMap"][0]["data"]["job.yaml"])
assert job["data"]["stream"]["versions_dir"] == "/var/lib/sampan-checkpoints/stream-ctr/versions", job["data"]["stream"]
trainer = by[("Job", "stream-ctr-trainer")]["spec"]["template"]["spec"]["containers"][0]
assert "/var/lib/sampan-checkpoints" in {m["mountPath"] for m in trainer["volumeMounts"]}
PY

# 1d. Sharded serving (serving.shards: 2): a lookup StatefulSet whose pods
# keep their stores on their own volumes and mount the shared versions;
# predictors run --role=predictor and reach each shard by its pod's DNS name.
sed 's/^serving: {enabled: true, poll_seconds: 10}$/serving: {enabled: true, poll_seconds: 10, shards: 2}/' \
  "$RUNFILES/configs/k8s-stream.yaml" > "$TMP/k8s-sharded.yaml"
if "$SAMPAN" render "$TMP/k8s-sharded.yaml" --target=k8s -o "$TMP/k8s-sharded" > /dev/null &&
   kubectl kustomize "$TMP/k8s-sharded" > "$TMP/k8s-sharded.objects.yaml"; then
  out=$(validate "$TMP/k8s-sharded.objects.yaml") && pass "k8s-sharded: $out" || fail "k8s-sharded: $out"
  python3 - "$TMP/k8s-sharded.objects.yaml" <<'PY' && pass "k8s-sharded: lookup shards and predictors wired" || fail "k8s-sharded serving objects"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
sts = by[("StatefulSet", "stream-ctr-lookup")]
assert sts["spec"]["replicas"] == 2 and sts["spec"]["serviceName"] == "stream-ctr-lookup"
c = sts["spec"]["template"]["spec"]["containers"][0]
assert c["args"][:5] == ["serve", "/etc/sampan/job.yaml",
                         "--ready_file=/var/lib/sampan/serving.ready",
                         "--role=lookup", "--shard=$(SAMPAN_INDEX)"], c["args"]
assert not any(a.startswith("--coordinator") for a in c["args"]), c["args"]
mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
assert mounts["/var/lib/sampan"] == "store" and "/var/lib/sampan-checkpoints" in mounts, mounts
assert sts["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "10Gi"
assert by[("Service", "stream-ctr-lookup")]["spec"]["clusterIP"] == "None"
pred = by[("Deployment", "stream-ctr-serving")]["spec"]["template"]["spec"]["containers"][0]
assert "--role=predictor" in pred["args"], pred["args"]
job = yaml.safe_load([d for d in docs if d["kind"] == "ConfigMap"][0]["data"]["job.yaml"])
assert job["serving"]["shard_addresses"] == [
    "stream-ctr-lookup-0.stream-ctr-lookup:7000",
    "stream-ctr-lookup-1.stream-ctr-lookup:7000"], job["serving"]
PY
else
  fail "render or kustomize k8s-sharded"
fi

# 2. deploy/: base and overlays; the base is current.
"$SAMPAN" render "$RUNFILES/configs/k8s-demo.yaml" --target=k8s -o "$TMP/base-now" > /dev/null
diff -r "$RUNFILES/deploy/base" "$TMP/base-now" > "$TMP/base.diff" \
  && pass "deploy/base matches sampan render configs/k8s-demo.yaml" \
  || { fail "deploy/base is stale; regenerate: bazel-bin/cli/sampan render configs/k8s-demo.yaml --target=k8s -o deploy/base"; head -20 "$TMP/base.diff"; }
# kustomize does not read runfiles' symlinks: work on a real copy.
cp -rL "$RUNFILES/deploy" "$TMP/deploy"
for dir in base overlays/dev overlays/prod; do
  kubectl kustomize "$TMP/deploy/$dir" > "$TMP/deploy-${dir//\//-}.yaml" \
    || { fail "kubectl kustomize deploy/$dir"; continue; }
  out=$(validate "$TMP/deploy-${dir//\//-}.yaml") && pass "deploy/$dir: $out" || fail "deploy/$dir: $out"
done
grep -q "image: registry.example.com/sampan:0.1.0" "$TMP/deploy-overlays-prod.yaml" \
  || fail "prod overlay does not set the image"

# 3. The validator can fail.
python3 - "$TMP/demo.objects.yaml" "$TMP/broken.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] == "StatefulSet":
        d["spec"]["template"]["spec"]["containers"][0]["readinessProbes"] = {}
    if d["kind"] == "Job":
        d["spec"]["completions"] = "two"
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
PY
out=$(validate "$TMP/broken.yaml")
grep -q "containers\[0\].readinessProbes: unknown field" <<< "$out" \
  && grep -q "completions must be integer" <<< "$out" \
  && pass "validator rejects an unknown field and a wrong type" \
  || fail "validator missed a broken object: $out"

# 4. submit without a cluster.
out=$(KUBECONFIG="$TMP/no-such-kubeconfig" "$SAMPAN" submit "$RUNFILES/configs/k8s-demo.yaml" -o "$TMP/submit" 2>&1); rc=$?
[ $rc -ne 0 ] && grep -q "no Kubernetes cluster configured" <<< "$out" \
  && [ -f "$TMP/submit/kustomization.yaml" ] \
  && pass "submit without a cluster: exit $rc, clear error, objects left in $TMP/submit" \
  || fail "submit without a cluster: rc=$rc $out"

# 5. Runtime libraries in the image.
dockerfile="$RUNFILES/deploy/Dockerfile"
missing=""
for pkg in $(ldd "$SAMPAN" | awk '/=>/ {print $3}' | while read -r f; do
    dpkg -S "$(readlink -f "$f")" 2>/dev/null || dpkg -S "${f/\/lib\//\/usr\/lib\/}" 2>/dev/null
  done | cut -d: -f1 | sort -u); do
  case "$pkg" in libc6|libgcc-s1|libstdc++6|zlib1g|libbz2-1.0) continue ;; esac  # in bookworm-slim
  # Only sanitizer test builds (`--config=asan|tsan`) link these; images never.
  case "$pkg" in libasan*|libubsan*|libtsan*) continue ;; esac
  grep -qw -- "$pkg" "$dockerfile" || missing="$missing $pkg"
done
[ -z "$missing" ] && pass "Dockerfile installs every linked library" \
  || fail "deploy/Dockerfile runtime stage lacks:$missing"

# 6. TLS on Kubernetes: servers advertise stable DNS names, and the
# certificate scripts/make-certs.sh makes for the job names every one of
# them. Read off the rendered sharded-serving job: the coordinator address
# pods dial, each pserver pod's --advertise ($(POD_NAME) expanded as its
# StatefulSet names pods), the lookup shards' addresses and the name the
# ServiceMonitor checks scrapes against.
python3 - "$TMP/k8s-sharded.objects.yaml" > "$TMP/dialed.txt" <<'PY' \
  || fail "reading the advertised names"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
names = set()
for d in docs:
    if d["kind"] not in ("Deployment", "StatefulSet", "Job"):
        continue
    for a in d["spec"]["template"]["spec"]["containers"][0]["args"]:
        if a.startswith("--coordinator="):
            names.add(a.split("=", 1)[1].rsplit(":", 1)[0])
        if a.startswith("--advertise="):
            host = a.split("=", 1)[1]
            pods = ["%s-%d" % (d["metadata"]["name"], i)
                    for i in range(d["spec"]["replicas"])]
            assert "$(POD_NAME)" in host or d["kind"] == "Deployment", host
            names.update(host.replace("$(POD_NAME)", p) for p in pods)
job = yaml.safe_load([d for d in docs if d["kind"] == "ConfigMap"][0]["data"]["job.yaml"])
names.update(a.rsplit(":", 1)[0] for a in job["serving"]["shard_addresses"])
monitor = [d for d in docs if d["kind"] == "ServiceMonitor"][0]["spec"]["endpoints"][0]
assert monitor["scheme"] == "https", monitor
names.add(monitor["tlsConfig"]["serverName"])
print("\n".join(sorted(names)))
PY
want="stream-ctr-coordinator stream-ctr-lookup-0.stream-ctr-lookup stream-ctr-lookup-1.stream-ctr-lookup stream-ctr-metrics stream-ctr-pserver-0.stream-ctr-pserver stream-ctr-pserver-1.stream-ctr-pserver stream-ctr-pserver-2.stream-ctr-pserver stream-ctr-pserver-3.stream-ctr-pserver"
[ "$(tr '\n' ' ' < "$TMP/dialed.txt")" = "$want " ] \
  && pass "servers advertise stable DNS names: $(wc -l < "$TMP/dialed.txt") names" \
  || fail "advertised names: $(tr '\n' ' ' < "$TMP/dialed.txt"), want $want"
pki="$TMP/pki"
SAMPAN="$SAMPAN" bash "$RUNFILES/scripts/make-certs.sh" "$TMP/k8s-sharded.yaml" "$pki" > "$TMP/certs.out" 2>&1 \
  && grep -q "kubectl create secret generic stream-ctr-tls" "$TMP/certs.out" \
  && pass "make-certs.sh made a CA, a certificate and a token for stream-ctr-tls" \
  || { fail "make-certs.sh: $(cat "$TMP/certs.out")"; }
# A real TLS pserver (with /metrics) from this repo on 127.0.0.1 with that
# certificate; clients dial 127.0.0.1 and check the certificate against each
# name (gRPC's ssl_target_name_override; curl --resolve), as pods would
# after resolving it.
cat > "$TMP/certs-job.yaml" <<YAML
name: certs
output_dir: $TMP/certs-job
cluster: {num_pservers: 1, security: {tls_cert_file: $pki/tls.crt,
          tls_key_file: $pki/tls.key, tls_ca_file: $pki/ca.crt, token_file: $pki/token}}
YAML
"$SAMPAN" pserver --config="$TMP/certs-job.yaml" --index=0 --port=0 \
  --port_file="$TMP/certs.port" --metrics_port=0 --metrics_port_file="$TMP/certs.metrics" \
  > "$TMP/certs-pserver.log" 2>&1 &
ps_pid=$!
for _ in $(seq 1 100); do [ -s "$TMP/certs.port" ] && [ -s "$TMP/certs.metrics" ] && break; sleep 0.1; done
port=$(cat "$TMP/certs.port" 2>/dev/null)
/usr/bin/python3 - "$port" "$pki" "$TMP/dialed.txt" <<'PY' && pass "the certificate verifies for every advertised name, and for no other" || fail "TLS by name: see above"
import sys, grpc
port, pki, dialed = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().split()
creds = grpc.ssl_channel_credentials(open(pki + "/ca.crt", "rb").read())
token = open(pki + "/token").read().strip()
def check(name):
    """grpc.health.v1.Health/Check over TLS, the certificate checked as `name`."""
    with grpc.secure_channel("127.0.0.1:" + port, creds,
                             options=[("grpc.ssl_target_name_override", name)]) as ch:
        call = ch.unary_unary("/grpc.health.v1.Health/Check")
        try:
            return call(b"", timeout=5, metadata=[("authorization", "Bearer " + token)])
        except grpc.RpcError as e:
            return e.code()
bad = []
for name in dialed + ["localhost"]:
    r = check(name)
    if r != b"\x08\x01":  # HealthCheckResponse{status: SERVING}
        bad.append((name, r))
for name in ["stream-ctr-pserver-4.stream-ctr-pserver", "stream-ctr-pserver", "10.1.2.3"]:
    r = check(name)
    if r != grpc.StatusCode.UNAVAILABLE:
        bad.append(("not in the certificate: " + name, r))
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
mport=$(cat "$TMP/certs.metrics" 2>/dev/null)
scrape() {  # extra curl args -> HTTP status of a scrape of the pserver as stream-ctr-metrics
  curl -s -o "$TMP/certs.scrape" -w '%{http_code}' --max-time 10 --cacert "$pki/ca.crt" \
    --resolve "stream-ctr-metrics:$mport:127.0.0.1" "$@" "https://stream-ctr-metrics:$mport/metrics"
}
code=$(scrape -H "Authorization: Bearer $(cat "$pki/token")")
[ "$code" = 200 ] && grep -q "^process_resident_memory_bytes" "$TMP/certs.scrape" \
  && [ "$(scrape)" = 401 ] \
  && pass "/metrics: HTTPS as stream-ctr-metrics with the token (200), without it 401" \
  || fail "/metrics over TLS: $code, $(head -c 200 "$TMP/certs.scrape")"
kill "$ps_pid" 2>/dev/null; wait "$ps_pid" 2>/dev/null

if [ $failures -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all checks passed"
