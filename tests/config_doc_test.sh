#!/usr/bin/env bash
# docs/config.md is the reference of every job config field:
#   1. regenerating it from proto/job.proto and the loader's defaults gives
#      the committed file (so a field added to job.proto without updating the
#      page fails here, naming the field); every field has a comment of its
#      own (the generator refuses one without) and no two fields of a
#      message read the same;
#   2. every preset in configs/ passes `sampan validate`, and renders for
#      Kubernetes when it has a TLS Secret (render refuses the others).
set -uo pipefail

RUNFILES="${TEST_SRCDIR}/${TEST_WORKSPACE}"
SAMPAN="$RUNFILES/cli/sampan"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

python3 "$RUNFILES/tests/config_doc_gen.py" "$SAMPAN" "$RUNFILES/proto/job.proto" \
  > "$TMP/config.md" 2> "$TMP/gen.err" || fail "generator failed: $(cat "$TMP/gen.err")"
# Each field's text is its own comment: no two fields of a message share
# one (a generator that let a field inherit its neighbour's gave `cluster`,
# `model` and `table` the text of `name`).
dups=$(grep -E '^\| `[a-z_.]+` \|' "$TMP/config.md" |
  awk -F' \\| ' '{ key = $1; sub(/[a-z_]+`$/, "", key); k = key SUBSEP $4 }
       $4 != "&nbsp; |" && (k in seen) { print seen[k] " and " $1 } { seen[k] = $1 }')
[ -z "$dups" ] || fail "fields of one message with the same text: $dups"
if ! diff -u "$RUNFILES/docs/config.md" "$TMP/config.md" > "$TMP/diff"; then
  missing=$(grep '^+| `' "$TMP/diff" | cut -d'`' -f2 | tr '\n' ' ')
  fail "docs/config.md is out of date with proto/job.proto${missing:+ (undocumented or changed: $missing)}.
Regenerate: python3 tests/config_doc_gen.py bazel-bin/cli/sampan proto/job.proto > docs/config.md"
  head -40 "$TMP/diff"
fi
# Every field path of the schema has a row (guards the generator itself).
rows=$(grep -c '^| `[a-z_.]*` |' "$RUNFILES/docs/config.md")
fields=$(grep -cE '^\s*(repeated\s+)?[A-Za-z0-9_.]+\s+[a-z_0-9]+\s*=\s*[0-9]+;' "$RUNFILES/proto/job.proto")
[ "$rows" -ge "$fields" ] || fail "docs/config.md has $rows field rows, job.proto declares $fields fields"

presets=0
for preset in "$RUNFILES"/configs/*.yaml; do
  presets=$((presets + 1))
  name=$(basename "$preset")
  out=$("$SAMPAN" validate "$preset" 2>&1) || fail "sampan validate $name: $out"
  # A local preset (no kubernetes.tls_secret, not insecure) would have pods
  # refuse to listen on their IPs, and a local stream preset has no shared
  # volume for its versions: render refuses both with exit 2
  # (k8s_manifests_test checks the messages and renders them made insecure).
  want=0; grep -q "tls_secret:" "$preset" || want=2
  "$SAMPAN" render "$preset" --target=k8s -o "$TMP/render-$name" > /dev/null 2>&1
  rc=$?; [ $rc -eq $want ] || fail "sampan render $name: exit $rc, want $want"
done
[ "$presets" -ge 5 ] || fail "expected at least 5 presets in configs/, found $presets"

if [ $failures -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "ok: docs/config.md matches job.proto ($rows fields); $presets presets validate and render"
