#!/usr/bin/env bash
# Prints what the last `bazel test` skipped and why, from the tests' logs
# (bazel-testlogs): fault cases' "SKIP: reason" lines and GoogleTest's
# skipped tests with the reason GTEST_SKIP gave. A skip passes, so without
# this list it would read as a pass. Always exits 0.
cd "$(dirname "$0")/.." || exit 0
[ -d bazel-testlogs/ ] || exit 0
found=0
while IFS= read -r log; do
  target="//$(dirname "${log#bazel-testlogs/}" | sed 's|/\([^/]*\)$|:\1|')"
  reasons=$(awk '
    /^SKIP: / { sub(/^SKIP: /, ""); print; next }
    / Skipped$/ { getline why; skipped = why; next }
    /^\[  SKIPPED \] [A-Za-z]/ && skipped != "" { print $4 ": " skipped; skipped = "" }
  ' "$log" | sort -u)
  [ -n "$reasons" ] || continue
  [ $found -eq 1 ] || echo "skipped (these passed without running all their checks):"
  found=1
  while IFS= read -r r; do echo "  $target: $r"; done <<< "$reasons"
done < <(find -L bazel-testlogs/ -name test.log 2>/dev/null | sort)
[ $found -eq 1 ] || echo "skipped: nothing"
exit 0
