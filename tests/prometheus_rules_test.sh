#!/usr/bin/env bash
# deploy/prometheus/alerts.yml passes `promtool check rules` and its unit
# tests (alerts_test.yml: the alerts fire, and only when they should);
# deploy/grafana/sampan-job.json is a dashboard with the panels operators
# need, each with a PromQL query. (tests/prometheus_job_test.sh runs those
# queries against a real Prometheus scraping a real job.)
set -uo pipefail

RUNFILES="${TEST_SRCDIR}/${TEST_WORKSPACE}"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
command -v promtool > /dev/null || { echo "FAIL: promtool missing (install-deps installs prometheus)"; exit 1; }
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

cp -L "$RUNFILES"/deploy/prometheus/*.yml "$TMP/"
(cd "$TMP" && promtool check rules alerts.yml) || fail "promtool check rules"
(cd "$TMP" && promtool test rules alerts_test.yml) || fail "promtool test rules"

python3 - "$RUNFILES/deploy/grafana/sampan-job.json" <<'PY' || fail "dashboard"
import json, sys
d = json.load(open(sys.argv[1]))
titles = {p["title"] for p in d["panels"]}
need = {"Progress", "Train AUC", "Throughput", "PS latency", "PS QPS",
        "Table size", "Memory"}
missing = need - titles
assert not missing, "dashboard lacks panels: %s" % sorted(missing)
for p in d["panels"]:
    assert p["targets"] and all(t["expr"].strip() for t in p["targets"]), p["title"]
    assert p["datasource"]["uid"] == "${datasource}", p["title"]
names = [v["name"] for v in d["templating"]["list"]]
assert names == ["datasource", "job"], names
print("ok: dashboard has %d panels incl. %s" % (len(d["panels"]), ", ".join(sorted(need))))
PY

if [ $failures -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all checks passed"
