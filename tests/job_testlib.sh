# Shared by the `sampan run` suites: source it after `set -uo pipefail`.
# Gives SAMPAN (the binary under test), TMP, fail/pass counters, leftover()
# and finish (exit status from the count).

SAMPAN="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/cli/sampan"
[ -x "$SAMPAN" ] || SAMPAN="bazel-bin/cli/sampan"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# Processes of the job in output dir $1: children carry it in --config.
leftover() { pgrep -f -- "--config=$1/" || true; }

finish() {
  if [ $failures -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}
