#!/usr/bin/env bash
# table.durability under a machine crash, not only a process crash: a real
# `sampan pserver` (RocksDB table, counter workload of tests/ps_counter_load)
# runs under tests/crashfs, which keeps what a power cut would leave of its
# data directory (every byte and name not fsynced is lost; crashfs.h). Each
# cycle: two counter loads push until they have a few acknowledged rounds,
# SIGKILL the pserver, cut its directory to that state (crashfs_rewind),
# restart it, and read every counter back: each acknowledged round must be
# there exactly once (the round in flight may or may not be), this cycle's
# and every earlier cycle's.
#
#   SYNC, REDO_LOG with SST_FILES and with MEMTABLE write-back, ROCKSDB_WAL:
#     0 lost, 0 doubled after every cut;
#   WAL, REDO_LOG and ROCKSDB_WAL (the control): acknowledged rounds lost,
#     none doubled. WAL acknowledges before any fsync, so a cut that drops
#     unsynced data must lose some; if it did not, the cut would drop
#     nothing and the SYNC cases would prove nothing.
set -uo pipefail

RUNFILES="${TEST_SRCDIR}/${TEST_WORKSPACE}"
SAMPAN="$RUNFILES/cli/sampan"
LOAD="$RUNFILES/tests/ps_counter_load"
CRASHFS="$RUNFILES/tests/crashfs/libcrashfs.so"
REWIND="$RUNFILES/tests/crashfs/crashfs_rewind"
TMP="$(cd "${TEST_TMPDIR}" && pwd -P)"
# A sanitizer build's runtime wants to come first; the interposer is first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
# Every synced copy is compared with the file in full: the model is exact.
export CRASHFS_VERIFY=1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }
log() { echo "[$(date +%T.%N | cut -c1-12)] $*"; }

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts the pserver of scenario $dir under crashfs (pid in $pserver).
start_pserver() {
  LD_PRELOAD="$CRASHFS" CRASHFS_ROOT="$dir/tables" CRASHFS_STATE="$dir/crashfs" \
    "$SAMPAN" pserver --config="$dir/job.yaml" --index=0 --port="$port" \
    >> "$dir/pserver.log" 2>&1 &
  pserver=$!
  for _ in $(seq 1 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 $pserver 2>/dev/null || break
    sleep 0.05
  done
  fail "$name: pserver did not come up"; tail -20 "$dir/pserver.log"; return 1
}

acked_of() {  # the acknowledged rounds load $1 recorded
  local n=0
  [ -s "$dir/acked-$1" ] && read -r _ n _ < "$dir/acked-$1"
  echo "${n:-0}"
}

# Reads the counters of key slot $1 back; adds to $lost_total and
# $doubled_total (doubled or matching no count).
verify_slot() {
  local out="$dir/verify-$1-c$cycle" rc counts
  "$LOAD" --config="$dir/job.yaml" --pservers="127.0.0.1:$port" --keys=500 \
    --key_slot="$1" --verify=1 --acked="$(acked_of "$1")" --in_doubt=1 \
    --retry_ms=20000 > "$out" 2>&1
  rc=$?
  echo "    slot $1: $(cat "$out")"
  counts=$(sed -n 's/.*: \([0-9]*\) lost, \([0-9]*\) doubled, \([0-9]*\) unmatched.*/\1 \2 \3/p' "$out")
  if [ -z "$counts" ] || { [ $rc -ne 0 ] && [ $rc -ne 3 ]; }; then
    fail "$name: verify of slot $1 exited $rc"
    doubled_total=$((doubled_total + 1))
    return
  fi
  set -- $counts
  lost_total=$((lost_total + $1))
  doubled_total=$((doubled_total + $2 + $3))
}

# One cycle: push until both loads have $1 acknowledged rounds, cut, restart,
# verify every slot so far. Adds to $lost_total and $doubled_total.
cycle() {
  local want=$1 slots="$((10 * cycle + 1)) $((10 * cycle + 2))" s loads=""
  for s in $slots; do
    "$LOAD" --config="$dir/job.yaml" --pservers="127.0.0.1:$port" --keys=500 \
      --key_slot="$s" --rounds=100000 --deadline_ms=2000 --retry_ms=30000 \
      --out="$dir/acked-$s" > "$dir/load-$s.out" 2>&1 &
    loads="$loads $!"
  done
  local deadline=$((SECONDS + 30)) ready=0
  while [ $SECONDS -lt $deadline ]; do
    ready=1
    for s in $slots; do [ "$(acked_of "$s")" -ge "$want" ] || ready=0; done
    [ $ready -eq 1 ] && break
    sleep 0.005
  done
  kill -9 $pserver; wait $pserver 2>/dev/null
  kill -9 $loads; wait $loads 2>/dev/null
  [ $ready -eq 1 ] || { fail "$name: cycle $cycle: loads did not reach $want rounds"; cat "$dir"/load-*.out; }
  log "$name cycle $cycle: SIGKILL at $(for s in $slots; do echo -n "$(acked_of "$s") "; done)acknowledged rounds"
  "$REWIND" "$dir/crashfs" "$dir/tables" > "$dir/rewind-$cycle.out" 2>&1 \
    || { fail "$name: rewind exited $?"; cat "$dir/rewind-$cycle.out"; }
  tail -1 "$dir/rewind-$cycle.out"
  grep -q " [1-9][0-9]* file syncs" "$dir/rewind-$cycle.out" \
    || fail "$name: cycle $cycle: crashfs saw no fsync (not preloaded?)"
  all_slots="$all_slots $slots"
  start_pserver || return
  for s in $all_slots; do verify_slot "$s"; done
}

scenario() {  # name durability durability_log write_back expect(exact|loses) targets...
  name=$1
  local durability=$2 durability_log=$3 write_back=$4 expect=$5
  shift 5
  dir="$TMP/$name"
  mkdir -p "$dir/tables"
  cat > "$dir/job.yaml" <<YAML
cluster: {num_pservers: 1, num_trainers: 1}
model: {type: LR}
table: {num_shards: 16, backend: ROCKSDB, durability: $durability,
        durability_log: $durability_log, write_back: $write_back,
        data_dir: $dir/tables, optimizer: {type: SGD, learning_rate: 1.0}}
output_dir: $dir/out
YAML
  port=$(free_port)
  lost_total=0 doubled_total=0 all_slots="" cycle=0
  start_pserver || return
  for want in "$@"; do
    cycle=$((cycle + 1))
    cycle "$want"
  done
  kill -TERM $pserver; wait $pserver 2>/dev/null
  local what="$durability/$durability_log/$write_back, $cycle cuts"
  if [ "$expect" = exact ]; then
    [ $lost_total -eq 0 ] && [ $doubled_total -eq 0 ] \
      && pass "$what: every acknowledged round survived each cut exactly once" \
      || fail "$what: $lost_total key-counts lost, $doubled_total doubled or unmatched"
  else
    [ $lost_total -gt 0 ] && [ $doubled_total -eq 0 ] \
      && pass "$what (control): the cuts lost acknowledged rounds ($lost_total key-counts), none doubled" \
      || fail "$what (control): $lost_total key-counts lost, $doubled_total doubled: the cut dropped nothing acknowledged"
  fi
}

# Acknowledged rounds per load at each cut (the last one a few rounds after
# a restart, which replayed the log). One cut of WAL/ROCKSDB_WAL loses for
# sure (RocksDB's WAL is fsynced only when a memtable is written out, which
# this little data never fills); WAL/REDO_LOG loses what came after the last
# write-back round (every 500 ms), which a cut right after an ack misses in
# a few percent of cuts: three make a miss of all of them negligible.
scenario sync_redo_sst SYNC REDO_LOG SST_FILES exact 25 2
scenario sync_redo_memtable SYNC REDO_LOG MEMTABLE exact 25 2
scenario sync_rocksdb_wal SYNC ROCKSDB_WAL SST_FILES exact 25 2
scenario wal_redo WAL REDO_LOG SST_FILES loses 25 2 2
scenario wal_rocksdb_wal WAL ROCKSDB_WAL SST_FILES loses 25

[ $failures -eq 0 ] || { for d in "$TMP"/*/pserver.log; do echo "--- $d"; tail -15 "$d"; done; exit 1; }
echo "all checks passed"
