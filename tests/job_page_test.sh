#!/usr/bin/env bash
# The live job page in a real browser. A secured job (TLS and a token, as on
# Kubernetes) runs under `sampan run`; headless Chromium loads the page the
# launcher announced, with the token in the address's #token= fragment, and
# the test reads the DOM after at least two refreshes:
#   - the shell came without the token, the data only with it (401 without);
#   - the state and the number of examples agree with `sampan status` taken
#     just before and just after the page's snapshot;
#   - the charts have points, every member has a row;
#   - a pserver SIGKILLed by the test shows as restarted, with the event;
#   - the checkpoints the job took are listed;
# and saves a screenshot (job_page.png among the test's outputs). When the
# job is stopped the coordinator freezes the page into <output_dir>/job.html,
# which must show the same restart and carry no script.
set -uo pipefail

source "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/tests/job_testlib.sh"
MAKE_CERTS="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/scripts/make-certs.sh"
OUT="${TEST_UNDECLARED_OUTPUTS_DIR:-$TMP}"
for tool in chromium curl python3; do
  command -v $tool > /dev/null || { echo "FAIL: $tool missing (scripts/install-deps.sh installs it)"; exit 1; }
done

job="$TMP/job"
pki="$TMP/pki"
cat > "$job.yaml" <<YAML
name: page-test
output_dir: $job
progress_interval_seconds: 0.5
cluster: {num_pservers: 2, num_trainers: 2, threads_per_trainer: 1,
          wait_timeout_seconds: 60, rpc_deadline_seconds: 2,
          security: {tls_cert_file: $pki/tls.crt, tls_key_file: $pki/tls.key,
                     tls_ca_file: $pki/ca.crt, token_file: $pki/token}}
model: {type: FM, embedding_dim: 4}
table: {num_shards: 16, backend: ROCKSDB}
checkpoint: {every_seconds: 2}
data:
  batch_size: 256
  epochs: 100000   # trains until the test stops it
  validation_fraction: 0   # (no early stopping: it would end the job)
  synthetic: {rows: 20000, seed: 5, test_fraction: 0.1}
YAML
SAMPAN="$SAMPAN" bash "$MAKE_CERTS" "$job.yaml" "$pki" > "$TMP/certs.out" 2>&1 \
  || { echo "FAIL: make-certs.sh: $(cat "$TMP/certs.out")"; exit 1; }
token=$(cat "$pki/token")

"$SAMPAN" run "$job.yaml" > "$TMP/run.out" 2>&1 &
launcher=$!
cleanup() { kill -INT "$launcher" 2>/dev/null && wait "$launcher" 2>/dev/null; }
trap cleanup EXIT

url=""
for _ in $(seq 1 600); do
  url=$(grep -o 'live job page: https://[^ #]*' "$TMP/run.out" | head -1 | cut -d' ' -f4)
  [ -n "$url" ] && break
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
[ -n "$url" ] || { fail "sampan run announced no live page"; cat "$TMP/run.out"; exit 1; }
pass "sampan run announced $url"

curl_job() { curl -s --max-time 10 -k "$@"; }
# body [TOKEN]: the page's data as the browser fetches it.
body() { curl_job -H "Authorization: Bearer $token" "$url/body"; }
status_examples() {
  "$SAMPAN" status "$job.yaml" --interval=0 2>&1 | sed -n 's/.*done, \([0-9]*\) examples.*/\1/p'
}

# Running, with a checkpoint taken.
for _ in $(seq 1 600); do
  b=$(body)  # read whole: `curl | grep -q` fails under pipefail when grep stops early
  grep -q 'checkpoint(s) completed' <<< "$b" && grep -q 'data-value="RUNNING"' <<< "$b" && break
  sleep 0.1
done
grep -q 'data-value="RUNNING"' <<< "$(body)" || fail "the job never showed RUNNING"
code=$(curl_job -o "$TMP/refused" -w '%{http_code}' "$url/body")
[ "$code" = 401 ] && ! grep -q data-role "$TMP/refused" \
  && pass "the page's data needs the token (401 without)" || fail "/job/body without the token: $code"
code=$(curl_job -o "$TMP/shell" -w '%{http_code}' "$url")
[ "$code" = 200 ] && grep -q "fetch('/job/body'" "$TMP/shell" && ! grep -q data-role "$TMP/shell" \
  && pass "the shell comes without the token and holds no job data" || fail "the shell: $code"

# SIGKILL pserver 1; the launcher restarts it (a RocksDB table survives).
victim=$(pgrep -f -- "--config=$job/job.pbtxt --index=1" | head -1)
[ -n "$victim" ] || victim=$(pgrep -f -- "pserver --config=$job/.* --index=1" | head -1)
if [ -z "$victim" ]; then
  fail "no pserver 1 process to kill"
else
  kill -9 "$victim"
  for _ in $(seq 1 600); do
    grep -q 'data-role="pserver" data-index="1" data-alive="1" data-restarts="1"' <<< "$(body)" && break
    sleep 0.1
  done
fi
# A few more seconds of training after the restart: the rates resume.
sleep 6

chrome() {
  HOME="$TMP/chrome-home" timeout 120 chromium --headless --no-sandbox --disable-gpu \
    --ignore-certificate-errors --user-data-dir="$TMP/chrome-profile" \
    --window-size=1280,1560 --virtual-time-budget=9000 "$@" "$url#token=$token" \
    2> "$TMP/chrome.err"
}
before=$(status_examples)
sleep 1.5  # the page's snapshot (the coordinator's tick) is newer than `before`
chrome --dump-dom > "$TMP/dom.html" || fail "chromium --dump-dom failed: $(tail -3 "$TMP/chrome.err")"
after=$(status_examples)
chrome --screenshot="$OUT/job_page.png" > /dev/null || fail "chromium --screenshot failed"

python3 - "$TMP/dom.html" "$before" "$after" <<'PY' || failures=$((failures + 1))
import re, sys
dom, before, after = open(sys.argv[1]).read(), int(sys.argv[2] or -1), int(sys.argv[3] or -1)
bad = []
def value(id_):
    m = re.search(r'id="%s" data-value="([^"]*)"' % id_, dom)
    return m.group(1) if m else None
m = re.search(r'data-refreshes="(\d+)"', dom)
refreshes = int(m.group(1)) if m else 0
if refreshes < 2: bad.append("refreshed %d times, not 2 or more" % refreshes)
if value("state") != "RUNNING": bad.append("state %s" % value("state"))
examples = int(value("examples") or -1)
if not (before <= examples <= after):
    bad.append("examples %d not between sampan status's %d and %d" % (examples, before, after))
if not 0 < float(value("examples-per-second") or 0): bad.append("no examples/s")
for title in ("Throughput", "Train loss", "Train AUC"):
    c = re.search(r'<title>%s</title>.*?points="([^"]*)"' % title, dom, re.S)
    n = len(c.group(1).split()) if c else 0
    if n < 2: bad.append("chart %s has %d points" % (title, n))
members = re.findall(r'data-role="(\w+)" data-index="(\d)" data-alive="(\d)" data-restarts="(\d+)"', dom)
if sorted((r, i) for r, i, _, _ in members) != [("pserver", "0"), ("pserver", "1"), ("trainer", "0"), ("trainer", "1")]:
    bad.append("members %s" % members)
if ("pserver", "1", "1", "1") not in members: bad.append("pserver 1 not shown alive and restarted once: %s" % members)
if not re.search(r"pserver 1 restarted \(incarnation 2\)", dom): bad.append("no restart event")
if not re.search(r"\d+ checkpoint\(s\) completed", dom): bad.append("no checkpoint listed")
m = re.search(r'<p id="connection"[^>]*>([^<]*)<', dom)
if not m or not m.group(1).startswith("live: updated"):
    bad.append("the page's connection line reads '%s'" % (m.group(1) if m else None))
if bad:
    print("FAIL: the page in Chromium: " + "; ".join(bad)); sys.exit(1)
print("ok: Chromium: %d refreshes; RUNNING; %d examples (status %d..%d); charts with points; "
      "4 members, pserver 1 restarted; checkpoints listed" % (refreshes, examples, before, after))
PY
[ -s "$OUT/job_page.png" ] && pass "screenshot saved: job_page.png ($(stat -c %s "$OUT/job_page.png") bytes)" \
  || fail "no screenshot"

# Stopped: the page frozen beside the logs.
kill -INT "$launcher"; wait "$launcher" 2>/dev/null
trap - EXIT
if [ -s "$job/job.html" ] && ! grep -q "<script" "$job/job.html" \
   && grep -q "pserver 1 restarted (incarnation 2)" "$job/job.html"; then
  pass "the stopped job's page is frozen in job.html, with the restart"
else
  fail "job.html: $(ls -la "$job/job.html" 2>&1)"
fi
[ -z "$(leftover "$job")" ] || fail "processes left: $(leftover "$job")"
[ $failures -eq 0 ] || { echo "--- sampan run"; tail -20 "$TMP/run.out"; tail -5 "$TMP/chrome.err"; }
finish
