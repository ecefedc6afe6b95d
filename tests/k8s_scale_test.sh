#!/usr/bin/env bash
# `sampan scale --target=k8s` against a fake kubectl that records its calls
# (a real cluster is not here): growing scales the pserver StatefulSet
# before asking the coordinator (inside its pod) for the fleet; shrinking
# asks first and scales the StatefulSet down only once the fleet is smaller;
# a failed rescale leaves the StatefulSet alone; no kubectl context changes
# nothing; a bad size is refused before kubectl is called.
set -uo pipefail
RUNFILES="${TEST_SRCDIR:-}/${TEST_WORKSPACE:-}"
if [ -n "${TEST_SRCDIR:-}" ] && [ -x "$RUNFILES/cli/sampan" ]; then
  SAMPAN="$RUNFILES/cli/sampan"
else
  SAMPAN="$(cd "$(dirname "$0")/.." && pwd)/bazel-bin/cli/sampan"
fi
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

mkdir -p "$TMP/bin"
cat > "$TMP/bin/kubectl" <<'SH'
#!/usr/bin/env bash
echo "$*" >> "$KUBECTL_LOG"
case "$1" in
  config) [ -z "${NO_CONTEXT:-}" ] ;;
  get) echo "${REPLICAS:-2}" ;;
  exec) exit "${EXEC_RC:-0}" ;;
  *) exit 0 ;;
esac
SH
chmod +x "$TMP/bin/kubectl"
export PATH="$TMP/bin:$PATH" KUBECTL_LOG="$TMP/kubectl.log"
cat > "$TMP/job.yaml" <<YAML
name: ctr-job
output_dir: $TMP/out
cluster: {num_pservers: 2, num_trainers: 2}
table: {num_shards: 16}
data: {synthetic: {rows: 1000}}
YAML

run() { : > "$KUBECTL_LOG"; "$SAMPAN" scale "$TMP/job.yaml" --target=k8s "$@" > "$TMP/out.txt" 2>&1; }

run --pservers=4; rc=$?
expected="config current-context
get statefulset/ctr-job-pserver -o jsonpath={.spec.replicas}
scale statefulset/ctr-job-pserver --replicas=4
exec deploy/ctr-job-coordinator -- sh -c sampan scale /etc/sampan/job.yaml --pservers=4 --wait_seconds=600 --coordinator=\$POD_IP:7000"
[ $rc -eq 0 ] && [ "$(cat "$KUBECTL_LOG")" = "$expected" ] &&
  pass "grow: StatefulSet to 4 first, then the rescale in the coordinator's pod" ||
  fail "grow (rc $rc): $(cat "$KUBECTL_LOG") $(cat "$TMP/out.txt")"

REPLICAS=4 run --pservers=2 --wait_seconds=30; rc=$?
expected="config current-context
get statefulset/ctr-job-pserver -o jsonpath={.spec.replicas}
exec deploy/ctr-job-coordinator -- sh -c sampan scale /etc/sampan/job.yaml --pservers=2 --wait_seconds=30 --coordinator=\$POD_IP:7000
scale statefulset/ctr-job-pserver --replicas=2"
[ $rc -eq 0 ] && [ "$(cat "$KUBECTL_LOG")" = "$expected" ] &&
  pass "shrink: the rescale first, then the StatefulSet down to 2" ||
  fail "shrink (rc $rc): $(cat "$KUBECTL_LOG") $(cat "$TMP/out.txt")"

REPLICAS=4 EXEC_RC=1 run --pservers=2; rc=$?
[ $rc -eq 1 ] && ! grep -q "^scale" "$KUBECTL_LOG" &&
  pass "a failed rescale leaves the StatefulSet at 4" ||
  fail "failed rescale (rc $rc): $(cat "$KUBECTL_LOG")"

NO_CONTEXT=1 run --pservers=3; rc=$?
[ $rc -eq 1 ] && grep -q "Nothing was scaled" "$TMP/out.txt" &&
  [ "$(wc -l < "$KUBECTL_LOG")" -eq 1 ] &&
  pass "no kubectl context: nothing scaled" ||
  fail "no context (rc $rc): $(cat "$TMP/out.txt")"

run --pservers=17; rc=$?
[ $rc -eq 2 ] && grep -q "must be in \[1, 16\]" "$TMP/out.txt" && [ ! -s "$KUBECTL_LOG" ] &&
  pass "17 pservers for 16 shards refused before kubectl" ||
  fail "bad size (rc $rc): $(cat "$TMP/out.txt")"

[ $failures -eq 0 ] && echo "all checks passed" || { echo "$failures check(s) failed"; exit 1; }
