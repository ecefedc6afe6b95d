#!/usr/bin/env bash
# The fault cases' skip(): a case that cannot run passes with a SKIP line,
# except in a run that allows no skips (SAMPAN_STRICT_SKIPS=1, CI), where it
# fails; tests/skipped.sh lists the skip with its reason.
set -uo pipefail
LIB="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
out=$(SAMPAN_STRICT_SKIPS= bash -c "source '$LIB'; skip 'needs a thing'; echo after"); rc=$?
[ $rc -eq 0 ] && [ "$out" = "SKIP: needs a thing" ] || { echo "FAIL: lenient skip: rc $rc, '$out'"; exit 1; }
out=$(SAMPAN_STRICT_SKIPS=1 bash -c "source '$LIB'; skip 'needs a thing'; echo after"); rc=$?
[ $rc -eq 1 ] && grep -q "^FAIL: skipped in a run that allows no skips.*: needs a thing$" <<< "$out" \
  || { echo "FAIL: strict skip: rc $rc, '$out'"; exit 1; }
echo "ok: skip passes by default and fails under SAMPAN_STRICT_SKIPS=1"
