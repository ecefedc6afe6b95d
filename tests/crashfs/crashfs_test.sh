#!/usr/bin/env bash
# crashfs's model, case by case (crashfs_probe.cc lists them):
#   1. the cases under libcrashfs.so, SIGKILLed, cut by crashfs_rewind: each
#      file holds what a power cut leaves (CRASHFS_VERIFY checks every
#      recorded copy in full on the way);
#   2. the same cases SIGKILLed without the library: most checks fail, so
#      the cases tell a power cut from a process crash;
#   3. refusals: a state directory used twice, a cut while the process runs.
set -uo pipefail
RUNFILES="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/crashfs"
LIB="$RUNFILES/libcrashfs.so"
PROBE="$RUNFILES/crashfs_probe"
REWIND="$RUNFILES/crashfs_rewind"
TMP="$(cd "${TEST_TMPDIR}" && pwd -P)"
# A sanitizer build's runtime wants to come first; the interposer is first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

setup() {  # dir
  rm -rf "$1"; mkdir -p "$1"/pre{1,2,3,4}
  echo -n old > "$1/pre1/old.txt"
  echo -n gone > "$1/pre2/gone.txt"
  echo -n truncate-me > "$1/pre3/t.txt"
  echo -n 0123456789 > "$1/pre4/tr.txt"
  echo -n 0123456789 > "$1/pre4/tr2.txt"
}

# 1. Under the library.
setup "$TMP/root"
LD_PRELOAD="$LIB" CRASHFS_ROOT="$TMP/root" CRASHFS_STATE="$TMP/state" \
  CRASHFS_VERIFY=1 "$PROBE" write "$TMP/root" > "$TMP/write.out" 2>&1
rc=$?
cat "$TMP/write.out"
[ $rc -eq 137 ] || fail "probe under crashfs exited $rc, want 137 (SIGKILL)"
"$REWIND" "$TMP/state" "$TMP/root" > "$TMP/rewind.out" 2>&1 || fail "rewind exited $?"
cat "$TMP/rewind.out"
[ ! -e "$TMP/state" ] || fail "rewind left the state directory"
if "$PROBE" check "$TMP/root"; then pass "every case as a power cut leaves it"
else fail "the cut differs from the model"; fi
grep -qE "file syncs" "$TMP/rewind.out" && ! grep -q " 0 file syncs" "$TMP/rewind.out" \
  || fail "the rewind saw no file syncs"

# 2. Without the library a SIGKILL keeps the page cache: the cases fail.
setup "$TMP/plain"
"$PROBE" write "$TMP/plain" > /dev/null 2>&1
"$PROBE" check "$TMP/plain" > "$TMP/plain.out"
cat "$TMP/plain.out"
wrong=$(grep -c "^FAIL" "$TMP/plain.out")
[ "$wrong" -ge 10 ] && pass "a plain SIGKILL fails $wrong checks" \
  || fail "only $wrong checks fail after a plain SIGKILL: the cases do not tell a power cut"

# 3. Refusals.
setup "$TMP/root3"; mkdir -p "$TMP/used"
LD_PRELOAD="$LIB" CRASHFS_ROOT="$TMP/root3" CRASHFS_STATE="$TMP/used" \
  /bin/true > "$TMP/used.out" 2>&1 && fail "a used state directory was accepted"
grep -q "crashfs: CRASHFS_STATE $TMP/used: File exists" "$TMP/used.out" \
  && pass "a used state directory is refused" || { cat "$TMP/used.out"; fail "refusal unclear"; }
LD_PRELOAD="$LIB" CRASHFS_ROOT="$TMP/root3" CRASHFS_STATE="$TMP/state3" \
  sleep 30 &
sleeper=$!
for _ in $(seq 1 50); do [ -s "$TMP/state3/owner" ] && break; sleep 0.1; done
"$REWIND" "$TMP/state3" "$TMP/root3" > "$TMP/live.out" 2>&1; rc=$?
[ $rc -eq 2 ] && grep -q "still runs" "$TMP/live.out" \
  && pass "no cut while the process runs" || { cat "$TMP/live.out"; fail "cut a live process (rc $rc)"; }
kill -9 $sleeper; wait $sleeper 2>/dev/null
"$REWIND" "$TMP/state3" "$TMP/root3" > /dev/null || fail "rewind after the kill exited $?"
[ "$(cat "$TMP/root3/pre3/t.txt")" = truncate-me ] || fail "untouched files changed"

[ $failures -eq 0 ] || exit 1
echo "all checks passed"
