#!/usr/bin/env bash
# A real Prometheus server (Debian's) scrapes a local job started by
# `sampan run`, and the test reads the job back through its HTTP API. The
# job is secured as a Kubernetes job is (TLS and a token, from
# scripts/make-certs.sh), and Prometheus scrapes it the way the job's
# rendered ServiceMonitor says (scheme, CA and server name, bearer token
# from the Secret's keys: here the files make-certs.sh wrote):
#   - every child wrote <output_dir>/metrics/<name>.port and its /metrics,
#     over HTTPS with the token, passes `promtool check metrics`; without
#     the token it answers 401, and plaintext HTTP gets no metrics;
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
MAKE_CERTS="$RUNFILES/scripts/make-certs.sh"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
for tool in prometheus promtool curl python3; do
  command -v $tool > /dev/null || { echo "FAIL: $tool missing (scripts/install-deps.sh installs it)"; exit 1; }
done
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

job="$TMP/job"
pki="$TMP/pki"
cat > "$job.yaml" <<YAML
name: prom-test
output_dir: $job
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 60,
          security: {tls_cert_file: $pki/tls.crt, tls_key_file: $pki/tls.key,
                     tls_ca_file: $pki/ca.crt, token_file: $pki/token}}
kubernetes: {tls_secret: prom-test-tls}
model: {type: FM, embedding_dim: 4}
table: {num_shards: 16}
data:
  batch_size: 256
  epochs: 100000   # trains until the test stops it
  validation_fraction: 0   # (no early stopping: it would end the job)
  synthetic: {rows: 20000, seed: 5, test_fraction: 0.1}
YAML

SAMPAN="$SAMPAN" bash "$MAKE_CERTS" "$job.yaml" "$pki" > "$TMP/certs.out" 2>&1 \
  || { echo "FAIL: make-certs.sh: $(cat "$TMP/certs.out")"; exit 1; }
# The scrape the rendered ServiceMonitor asks for, as a Prometheus scrape
# config; the Secret's keys are the files make-certs.sh wrote.
"$SAMPAN" render "$job.yaml" --target=k8s -o "$TMP/rendered" > /dev/null \
  || { echo "FAIL: render"; exit 1; }
python3 - "$TMP/rendered/monitoring.yaml" "$pki" > "$TMP/scrape.json" <<'PY' \
  || { echo "FAIL: reading the rendered ServiceMonitor"; exit 1; }
import json, sys, yaml
e = yaml.safe_load(open(sys.argv[1]))["spec"]["endpoints"][0]
secret = lambda ref: "%s/%s" % (sys.argv[2], ref["key"])
scrape = {"scheme": e["scheme"], "metrics_path": e["path"],
          "tls_config": {"ca_file": secret(e["tlsConfig"]["ca"]["secret"]),
                         "server_name": e["tlsConfig"]["serverName"]},
          "authorization": {"type": e["authorization"]["type"],
                            "credentials_file": secret(e["authorization"]["credentials"])}}
json.dump(scrape, sys.stdout)
PY
server_name=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tls_config"]["server_name"])' "$TMP/scrape.json")
token=$(cat "$pki/token")

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
  targets="$targets 127.0.0.1:$port"
  scrape=(curl -s --max-time 10 --cacert "$pki/ca.crt" --resolve "$server_name:$port:127.0.0.1")
  url="https://$server_name:$port/metrics"
  if "${scrape[@]}" -f -H "Authorization: Bearer $token" "$url" > "$TMP/$n.metrics" \
     && promtool check metrics < "$TMP/$n.metrics" > "$TMP/$n.lint" 2>&1; then
    :
  else
    fail "$n /metrics does not pass promtool: $(head -5 "$TMP/$n.lint" 2>/dev/null)"
  fi
  code=$("${scrape[@]}" -o "$TMP/$n.refused" -w '%{http_code}' "$url")
  [ "$code" = 401 ] && ! grep -q sampan_ "$TMP/$n.refused" \
    || fail "$n: a scrape without the token got $code"
  if curl -s --max-time 5 "http://127.0.0.1:$port/metrics" 2>/dev/null | grep -q process_; then
    fail "$n: /metrics answered plaintext HTTP"
  fi
done
[ $failures -eq 0 ] && pass "5 processes serve /metrics over HTTPS to the token only; each passes promtool check metrics"
[ $failures -eq 0 ] || { cat "$TMP/run.out"; exit 1; }

web=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 - "$TMP/scrape.json" $targets > "$TMP/prometheus.yml" <<'PY'
import json, sys, yaml
scrape = json.load(open(sys.argv[1]))
scrape.update({"job_name": "sampan", "static_configs": [{"targets": sys.argv[2:]}]})
print(yaml.safe_dump({"global": {"scrape_interval": "500ms", "evaluation_interval": "1s"},
                      "scrape_configs": [scrape]}))
PY
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
