#!/usr/bin/env bash
# Lists what the last `bazel test` skipped and why, from the tests' logs
# (bazel-testlogs, or $SAMPAN_TESTLOGS): fault cases' "SKIP: reason" lines
# and GoogleTest's skipped tests with the reason GTEST_SKIP gave. A skip
# passes in Bazel, so without this list it would read as a pass.
#
# The one skip policy of the project: with SAMPAN_STRICT_SKIPS=1 (CI sets
# it) a skip fails the run (exit 1) unless its reason contains one of the
# '|'-separated phrases in SAMPAN_ALLOW_SKIPS (CI allows "no usable GPU":
# its machines have none). Otherwise it only lists them (exit 0).
logs="${SAMPAN_TESTLOGS:-$(dirname "$0")/../bazel-testlogs}"
[ -d "$logs/" ] || exit 0
allowed() {  # reason
  local phrase
  IFS='|' read -ra phrases <<< "${SAMPAN_ALLOW_SKIPS:-}"
  for phrase in "${phrases[@]}"; do
    [ -n "$phrase" ] && [[ $1 == *"$phrase"* ]] && return 0
  done
  return 1
}
found=0 refused=0
while IFS= read -r log; do
  target="//$(dirname "${log#"$logs"/}" | sed 's|/\([^/]*\)$|:\1|')"
  reasons=$(awk '
    /^SKIP: / { sub(/^SKIP: /, ""); print; next }
    / Skipped$/ { getline why; skipped = why; next }
    /^\[  SKIPPED \] [A-Za-z]/ && skipped != "" { print $4 ": " skipped; skipped = "" }
  ' "$log" | sort -u)
  [ -n "$reasons" ] || continue
  [ $found -eq 1 ] || echo "skipped (these passed without running all their checks):"
  found=1
  while IFS= read -r r; do
    if [ "${SAMPAN_STRICT_SKIPS:-}" = 1 ] && ! allowed "$r"; then
      echo "  $target: $r  [not allowed in this run: SAMPAN_STRICT_SKIPS=1]"
      refused=$((refused + 1))
    else
      echo "  $target: $r"
    fi
  done <<< "$reasons"
done < <(find -L "$logs/" -name test.log 2>/dev/null | sort)
[ $found -eq 1 ] || echo "skipped: nothing"
if [ $refused -gt 0 ]; then
  echo "FAIL: $refused skip(s) not allowed (SAMPAN_ALLOW_SKIPS=\"${SAMPAN_ALLOW_SKIPS:-}\")"
  exit 1
fi
exit 0
