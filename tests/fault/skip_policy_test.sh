#!/usr/bin/env bash
# The skip policy (tests/skipped.sh): a fault case that cannot run passes
# with a "SKIP: reason" line (tests/fault/lib.sh); after the run the list
# names it and GoogleTest's skips with their reasons; with
# SAMPAN_STRICT_SKIPS=1 a skip fails the run unless SAMPAN_ALLOW_SKIPS names
# its reason.
set -uo pipefail
RUNFILES="${TEST_SRCDIR}/${TEST_WORKSPACE}"
out=$(bash -c "source '$RUNFILES/tests/fault/lib.sh'; skip 'needs a thing'; echo after"); rc=$?
[ $rc -eq 0 ] && [ "$out" = "SKIP: needs a thing" ] || { echo "FAIL: skip(): rc $rc, '$out'"; exit 1; }

logs="$TEST_TMPDIR/testlogs"
mkdir -p "$logs/tests/fault/disk_full_test" "$logs/trainer/model/gpu_mlp_test"
echo "SKIP: needs root (uid 1000)" > "$logs/tests/fault/disk_full_test/test.log"
printf '%s\n' "[ RUN      ] GpuMlpTest.Forward" "gpu_mlp_test.cc:49: Skipped" \
  "UNAVAILABLE: no usable GPU" "[  SKIPPED ] GpuMlpTest.Forward (0 ms)" \
  > "$logs/trainer/model/gpu_mlp_test/test.log"
run() { SAMPAN_TESTLOGS="$logs" bash "$RUNFILES/tests/skipped.sh"; }

out=$(SAMPAN_STRICT_SKIPS= run); rc=$?
[ $rc -eq 0 ] && grep -q "^  //tests/fault:disk_full_test: needs root (uid 1000)$" <<< "$out" \
  && grep -q "^  //trainer/model:gpu_mlp_test: GpuMlpTest.Forward: UNAVAILABLE: no usable GPU$" <<< "$out" \
  || { echo "FAIL: lenient list: rc $rc, '$out'"; exit 1; }
out=$(SAMPAN_STRICT_SKIPS=1 SAMPAN_ALLOW_SKIPS="no usable GPU" run); rc=$?
[ $rc -eq 1 ] && grep -q "disk_full_test: needs root (uid 1000)  \[not allowed" <<< "$out" \
  && ! grep -q "gpu_mlp_test.*not allowed" <<< "$out" \
  && grep -q "^FAIL: 1 skip(s) not allowed" <<< "$out" \
  || { echo "FAIL: strict run: rc $rc, '$out'"; exit 1; }
out=$(SAMPAN_STRICT_SKIPS=1 SAMPAN_ALLOW_SKIPS="no usable GPU|needs root" run); rc=$?
[ $rc -eq 0 ] || { echo "FAIL: strict run allowing both: rc $rc, '$out'"; exit 1; }
echo "ok: skips listed with reasons; a strict run fails on one it does not allow"
