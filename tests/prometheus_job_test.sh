#!/usr/bin/env bash
# A real Prometheus server (Debian's) scrapes a local job started by
# `sampan run`, and the test reads the job back through its HTTP API:
#   - every child wrote <output_dir>/metrics/<name>.port and its /metrics
#     passes `promtool check metrics`;
#   - examples, examples/s and train AUC from the coordinator's job gauges;
#   - pull latency histograms from the pservers and from the trainers;
#   - table rows from the pservers;
#   - `sampan status` shows the running job.
# The job trains until the test has seen everything, then Ctrl-C stops it,
# so no assertion depends on how fast the machine is.
set -uo pipefail

RUNFILES="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}"
SAMPAN="$RUNFILES/cli/sampan"
[ -x "$SAMPAN" ] || SAMPAN="bazel-bin/cli/sampan"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
for tool in prometheus promtool curl python3; do
  command -v $tool > /dev/null || { echo "FAIL: $tool missing (scripts/install-deps.sh installs it)"; exit 1; }
done
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

job="$TMP/job"
cat > "$job.yaml" <<YAML
name: prom-test
output_dir: $job
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 60}
model: {type: FM, embedding_dim: 4}
table: {num_shards: 16}
data:
  batch_size: 256
  epochs: 100000   # trains until the test stops it
  synthetic: {rows: 20000, seed: 5, test_fraction: 0.1}
YAML

"$SAMPAN" run "$job.yaml" > "$TMP/run.out" 2>&1 &
launcher=$!
prom=""
cleanup() {
  [ -n "$prom" ] && kill "$prom" 2>/dev/null && wait "$prom" 2>/dev/null
  kill -INT "$launcher" 2>/dev/null && wait "$launcher" 2>/dev/null
}
trap cleanup EXIT

names="coordinator pserver-0 pserver-1 trainer-0 trainer-1"
for _ in $(seq 1 600); do
  all=1
  for n in $names; do [ -s "$job/metrics/$n.port" ] || all=0; done
  [ $all -eq 1 ] && break
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
targets=""
for n in $names; do
  port=$(cat "$job/metrics/$n.port" 2>/dev/null)
  if [ -z "$port" ]; then fail "$n wrote no metrics port file"; continue; fi
  targets="$targets'127.0.0.1:$port', "
  if curl -sf "http://127.0.0.1:$port/metrics" > "$TMP/$n.metrics" \
     && promtool check metrics < "$TMP/$n.metrics" > "$TMP/$n.lint" 2>&1; then
    :
  else
    fail "$n /metrics does not pass promtool: $(head -5 "$TMP/$n.lint")"
  fi
done
[ $failures -eq 0 ] && pass "5 processes serve /metrics that pass promtool check metrics"
[ $failures -eq 0 ] || { cat "$TMP/run.out"; exit 1; }

web=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$TMP/prometheus.yml" <<YAML
global: {scrape_interval: 500ms, evaluation_interval: 1s}
scrape_configs:
  - job_name: sampan
    static_configs: [{targets: [${targets%, }]}]
YAML
promtool check config "$TMP/prometheus.yml" > /dev/null || fail "generated prometheus.yml"
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
  --web.listen-address="127.0.0.1:$web" --log.level=warn > "$TMP/prometheus.log" 2>&1 &
prom=$!

# query EXPR -> the first sample's value, or empty while there is none.
query() {
  curl -sf "http://127.0.0.1:$web/api/v1/query" --data-urlencode "query=$1" 2>/dev/null \
    | python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")' 2>/dev/null
}
# await NAME EXPR: waits (up to 2 minutes) until EXPR has a sample > 0.
await() {
  local v=""
  for _ in $(seq 1 240); do
    v=$(query "$2")
    if [ -n "$v" ] && python3 -c "import sys; sys.exit(not float('$v') > 0)"; then
      pass "$1 = $v"; return 0
    fi
    sleep 0.5
  done
  fail "$1: no positive value for $2 (last '$v')"
}

await "targets up" 'count(up == 1) == 5'
await "examples trained (coordinator)" 'sum(sampan_job_examples_total)'
await "examples/s (coordinator)" 'max_over_time(sampan_job_examples_per_second[10m])'
await "train AUC (coordinator)" 'min(sampan_job_train_auc) > 0.5'
await "trainers alive" 'sampan_job_members_alive{role="trainer"} == 2'
await "pserver pull latency p99, seconds" \
  'histogram_quantile(0.99, sum by (le) (rate(sampan_pserver_request_duration_seconds_bucket{method="Pull"}[1m])))'
await "trainer pull latency p50, seconds" \
  'histogram_quantile(0.5, sum by (le) (rate(sampan_client_pull_duration_seconds_bucket[1m])))'
await "table rows" 'sum(sampan_table_rows)'
await "process memory" 'sum(process_resident_memory_bytes)'

# Every dashboard panel shows data from this job, and every alert
# expression evaluates (dashboards and rules name real metrics).
python3 - "$web" "$RUNFILES/deploy/grafana/sampan-job.json" "$RUNFILES/deploy/prometheus/alerts.yml" <<'PY' \
  && pass "every dashboard panel has data; every alert expression evaluates" || fail "dashboard or alert queries"
import json, sys, urllib.parse, urllib.request, yaml
web, dashboard, rules = sys.argv[1:]
def query(expr):
    url = "http://127.0.0.1:%s/api/v1/query?%s" % (web, urllib.parse.urlencode({"query": expr}))
    r = json.load(urllib.request.urlopen(url, timeout=10))
    assert r["status"] == "success", (expr, r)
    return r["data"]["result"]
bad = []
for panel in json.load(open(dashboard))["panels"]:
    exprs = [t["expr"].replace("$job", ".*") for t in panel["targets"]]
    if not any(query(e) for e in exprs):
        bad.append(panel["title"])
for group in yaml.safe_load(open(rules))["groups"]:
    for rule in group["rules"]:
        query(rule["expr"])
assert not bad, "panels without data: %s" % bad
PY

status=$("$SAMPAN" status "$job.yaml" --interval=0.5 2>&1)
echo "$status"
grep -q "RUNNING" <<< "$status" && grep -q "trainers 2/2 alive" <<< "$status" \
  && pass "sampan status shows the running job" || fail "sampan status: $status"
"$SAMPAN" status "$TMP/nothing.yaml" > /dev/null 2>&1 && fail "status of no job succeeded"

if [ $failures -gt 0 ]; then
  echo "--- sampan run"; tail -20 "$TMP/run.out"
  echo "--- prometheus"; tail -20 "$TMP/prometheus.log"
  echo "$failures check(s) failed"; exit 1
fi
echo "all checks passed"
