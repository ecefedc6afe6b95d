# Shared by the `sampan run` suites: source it after `set -uo pipefail`.
# Gives SAMPAN (the binary under test), TMP, fail/pass counters, leftover(),
# write_bad_rows and finish (exit status from the count).

SAMPAN="${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-sampan}/cli/sampan"
[ -x "$SAMPAN" ] || SAMPAN="bazel-bin/cli/sampan"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# Processes of the job in output dir $1: children carry it in --config.
leftover() { pgrep -f -- "--config=$1/" || true; }

# $1/train.tsv: 3000 Criteo rows, every tenth malformed (10%), and
# $1/test.tsv: the good ones of the first 500.
write_bad_rows() {  # dir
  mkdir -p "$1"
  awk 'BEGIN { for (i = 0; i < 3000; i++) {
    if (i % 10 == 3) { print "1\tnot-a-row"; continue }
    printf "%d", i % 4 == 0
    for (f = 0; f < 13; f++) printf "\t%d", (i * 7 + f) % 50
    for (f = 0; f < 26; f++) printf "\t%08x", (i * 13 + f * 101) % 977
    printf "\n" } }' > "$1/train.tsv"
  head -500 "$1/train.tsv" | grep -v not-a-row > "$1/test.tsv"
}

# Checks test AUC $2 against the planted model's AUC in the run's output $3
# (the best any model reaches on the generator's data, which `sampan run`
# prints for synthetic jobs): within $4 of it, so that a regression of a
# couple of hundredths fails, where a fixed "> 0.70" would not notice.
near_planted() {  # what auc output margin
  local planted
  planted=$(sed -n 's/^planted model (the best reachable): AUC \([0-9.]*\).*/\1/p' <<< "$3")
  if [ -z "$planted" ] || [ -z "$2" ]; then
    fail "$1: test AUC '$2', planted AUC '$planted' (not printed?)"
  elif awk -v a="$2" -v p="$planted" -v m="$4" 'BEGIN { exit !(a >= p - m) }'; then
    pass "$1: test AUC $2 (planted $planted, at most $4 below)"
  else
    fail "$1: test AUC $2 more than $4 below the planted model's $planted"
  fi
}

finish() {
  if [ $failures -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}
