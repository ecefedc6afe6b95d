#!/usr/bin/env bash
# Fault (e): a full disk under a pserver's RocksDB. pserver-1's directory is
# a tmpfs, shrunk after the first complete checkpoint to what it holds plus
# table.min_free_disk_bytes (20 MiB) plus 1 MiB, which the job soon
# outgrows. The pserver refuses pushes before RocksDB finds the
# disk full (pserver/disk_guard.h); the job must fail naming the cause and
# leave a complete checkpoint; the counter's acknowledged pushes must all be
# there once the disk has room again; and `sampan run --resume` must then
# finish with the fault-free AUC.
set -uo pipefail
CASE=disk_full
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh" 2>/dev/null ||
  source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/fault/lib.sh"
require_root "a size-limited tmpfs mount"

job="$TMP/disk-full"
write_job "$job"
sed -i 's/^table: {/table: {min_free_disk_bytes: 20971520, hot_tier_bytes: 8388608,\n        /' "$job.yaml"
disk="$job/tables/pserver-1"
mkdir -p "$disk"
mount -t tmpfs -o size=1g sampan-fault "$disk" 2> /dev/null ||
  skip "cannot mount a tmpfs on $disk"
trap 'cleanup_job; umount "$disk" 2>/dev/null' EXIT

start_time=$(date +%s)
start_job "$job" || finish
start_counter "$job"
for _ in $(seq 1 300); do [ "$(checkpoints_of "$job")" -ge 1 ] && break; sleep 0.1; done
used=$(df -m --output=used "$disk" | tail -1 | tr -d ' ')
size=$((used + 21))
mount -o remount,size=${size}m "$disk" || fail "cannot shrink the tmpfs to ${size} MiB"
log "tmpfs under pserver-1 shrunk to ${size} MiB (${used} MiB used)"
wait $launcher; rc=$?
tail -8 "$job.out"
reason=$(grep -m1 -hoE "disk full: .*" "$job.out" | head -1)
[ $rc -ne 0 ] || fail "the job finished: the ${size} MiB disk never filled"
[ -n "$reason" ] && pass "the job failed naming the cause: ${reason:0:160}" \
  || fail "the failure does not name the full disk: $(grep error "$job.out" | head -2)"
kept=$(checkpoints_of "$job")
[ "$kept" -ge 1 ] && pass "$kept complete checkpoint(s) left to resume from" \
  || fail "no complete checkpoint left"

mount -o remount,size=1g "$disk" || fail "cannot grow the tmpfs"
check_counter "$job"
"$SAMPAN" run "$job.yaml" --resume > "$job.resume.out" 2>&1; rc=$?
elapsed=$(( $(date +%s) - start_time ))
tail -3 "$job.resume.out"
from=$(sed -n 's/^resuming from //p' "$job.resume.out")
[ $rc -eq 0 ] && pass "--resume from ${from:-?} finished" \
  || fail "--resume exited $rc: $(grep error "$job.resume.out" | head -3)"
EXTRA_LINE="failed on a ${size} MiB disk, resumed from ${from##*/}, ${elapsed}s"
check_auc "$job"
check_leftover "$job"
finish
