#!/usr/bin/env bash
# The pserver fleet under load: P pservers and C client processes on
# loopback, Zipf keys, batches of BATCH unique keys of DIM floats, each step a
# pull plus an async push, pushes durable (RocksDB, WAL).
# Beside it in the same run: raw loopback TCP (iperf3) and the same loop on an
# in-process RocksDB table (C processes), so the RPC overhead shows as a ratio;
# then the RPC run again paced at half its maximum for the latency figure.
#
# The host is noisy (the same binary moves 1.5x between minutes), so REPS
# rounds alternate the in-process peer with the fleet at full and at half
# load, and the figures are medians over the rounds; the ratio is taken per
# round, each fleet run against the peer run just before it.
#
# usage: [BACKEND=ROCKSDB|MEMORY] [LOG=REDO_LOG|ROCKSDB_WAL]
#        [ROW_FORMAT=FP32|FP16|INT8] (table.row_format, fleet and peer)
#        [WRITE_BACK=SST_FILES|MEMTABLE] (the fleet's redo log write-back)
#        [REPS=3] [PS_THREADS=2] [SAMPAN=bazel-bin/cli/sampan]
#        [CLIENT=bazel-bin/bench/ps_load_client]
#        [TRACE_DIR=dir] (per pull: start in Unix ms, latency in ms)
#        bench/ps_load.sh [P=2] [C=2] [SECONDS=10]
#        (after `make build`)
set -Eeuo pipefail  # -E: the ERR trap fires inside functions too
# On a failure, the pservers' last words too: the run's directory is
# removed on exit, and a client's error alone rarely says why.
failed() {
  # Once, from the script itself: not from a $(...) subshell, nor again
  # at each calling function.
  [ "$BASHPID" = "$$" ] && [ -z "${reported:-}" ] || return 0
  reported=1
  echo "bench/ps_load.sh: failed at line $1" >&2
  for f in "${TMP:-/nonexistent}"/pserver-*.log; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -5 "$f" >&2; }
  done
}
trap 'failed $LINENO' ERR
cd "$(dirname "$0")/.."
P=${1:-2}; C=${2:-2}; SECS=${3:-10}; BACKEND=${BACKEND:-ROCKSDB}; LOG=${LOG:-REDO_LOG}; WRITE_BACK=${WRITE_BACK:-SST_FILES}; ROW_FORMAT=${ROW_FORMAT:-FP32}; BATCH=4096; DIM=16; SHARDS=64
REPS=${REPS:-3}; PS_THREADS=${PS_THREADS:-2}
SAMPAN=${SAMPAN:-bazel-bin/cli/sampan}; CLIENT=${CLIENT:-bazel-bin/bench/ps_load_client}
TMP=$(mktemp -d /tmp/sampan-psload.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

cpu_seconds() {  # utime + stime of a pid, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}

# --- peer 1: raw loopback TCP
iperf_port=$((20000 + RANDOM % 20000))
iperf3 -s -p $iperf_port > /dev/null 2>&1 & pids+=($!)
iperf_json=""
for _ in $(seq 1 20); do  # until the server listens
  iperf_json=$(iperf3 -c 127.0.0.1 -p $iperf_port -t 3 -J 2>/dev/null) && break
  sleep 0.2
done
# The TCP figure is a side reference: a failed iperf3 run (it answered with
# an error object once in six runs) prints n/a rather than ending the bench.
tcp_gbps=$(echo "$iperf_json" | /usr/bin/python3 -c '
import json, sys
try:
    print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))
except (ValueError, KeyError):
    print("n/a")')

# --- peer 2: the same loop on in-process tables of the same backend
sum_rate() { awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  rate += (v["keys_pulled"] + v["keys_pushed"]) / v["seconds"] } END { printf "%.0f", rate }'; }
run_inproc() {  # tag
  local inproc=()
  for c in $(seq 1 "$C"); do
    local dir_flag=""
    if [ "$BACKEND" = ROCKSDB ]; then
      rm -rf "$TMP/inproc-$c"
      dir_flag="--data_dir=$TMP/inproc-$c --durability_log=$LOG"
    fi
    "$CLIENT" --mode=inprocess $dir_flag --seconds="$SECS" --row_format="$ROW_FORMAT" \
      --batch=$BATCH --dim=$DIM --seed="$c" > "$TMP/$1-$c.out" &
    inproc+=($!)
  done
  wait "${inproc[@]}"
}

# --- the fleet
cat > "$TMP/job.yaml" <<YAML
cluster: {num_pservers: $P, num_trainers: 1, pserver_threads: $PS_THREADS}
model: {type: FM, embedding_dim: $((DIM - 1))}
table: {num_shards: $SHARDS, backend: $BACKEND, durability: WAL,
        durability_log: $LOG, write_back: $WRITE_BACK, row_format: $ROW_FORMAT,
        hot_tier_bytes: 1073741824, data_dir: $TMP/tables}
output_dir: $TMP/out
YAML
start_fleet() {  # a fresh fleet on empty tables: every round starts alike
  rm -rf "$TMP/tables" "$TMP"/port-*
  addresses=(); ps_pids=()
  for i in $(seq 0 $((P - 1))); do
    "$SAMPAN" pserver --config="$TMP/job.yaml" --index="$i" \
      --port_file="$TMP/port-$i" > "$TMP/pserver-$i.log" 2>&1 &
    pids+=($!); ps_pids+=($!)
  done
  for i in $(seq 0 $((P - 1))); do
    for _ in $(seq 1 200); do [ -s "$TMP/port-$i" ] && break; sleep 0.05; done
    addresses+=("127.0.0.1:$(cat "$TMP/port-$i")")
  done
  list=$(IFS=,; echo "${addresses[*]}")
}
stop_fleet() {
  for p in "${ps_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${ps_pids[@]}"; do wait "$p" 2>/dev/null || true; done
}

run_clients() {  # target_keys_per_sec_per_client tag
  local cpu0=0 cpu1=0
  for p in "${ps_pids[@]}"; do cpu0=$(echo "$cpu0 + $(cpu_seconds "$p")" | bc); done
  local t0; t0=$(date +%s.%N)
  local clients=()
  for c in $(seq 1 "$C"); do
    /usr/bin/time -f "%U %S" -o "$TMP/$2-$c.time" "$CLIENT" --pservers="$list" \
      --seconds="$SECS" --batch=$BATCH --dim=$DIM --seed="$((c + 10))" \
      --target_keys_per_sec="$1" ${TRACE_DIR:+--latency_trace="$TRACE_DIR/$2-$c.trace"} \
      > "$TMP/$2-$c.out" &
    clients+=($!)
  done
  wait "${clients[@]}"
  for p in "${ps_pids[@]}"; do cpu1=$(echo "$cpu1 + $(cpu_seconds "$p")" | bc); done
  client_cpu=$(cat "$TMP"/$2-*.time | awk '{ s += $1 + $2 } END { print s }')
  server_cpu=$(echo "$cpu1 - $cpu0" | bc)
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
field() {  # name files...: the largest value of name= over the files
  local name=$1; shift
  cat "$@" | sed -n "s/.*$name=\([0-9.]*\).*/\1/p" | sort -n | tail -1
}
rounds=()
for r in $(seq 1 "$REPS"); do
  run_inproc "inproc$r"
  inproc_rate=$(cat "$TMP"/inproc$r-*.out | sum_rate)
  start_fleet
  run_clients 0 "max$r"
  max_rate=$(cat "$TMP"/max$r-*.out | sum_rate)
  keys_total=$(cat "$TMP"/max$r-*.out | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    n += v["keys_pulled"] + v["keys_pushed"] } END { print n }')
  cpu_per_m=$(echo "scale=3; ($client_cpu + $server_cpu) * 1000000 / $keys_total" | bc)
  ps_cpu_per_m=$(echo "scale=3; $server_cpu * 1000000 / $keys_total" | bc)
  per_push=$(cat "$TMP"/max$r-*.out | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    k += v["keys_pushed"]; n += v["push_requests"] } END { printf "%.0f", n ? k / n : 0 }')
  half=$(echo "$max_rate / 4 / $C" | bc)  # half the combined rate, in pulled keys/s per client
  run_clients "$half" "half$r"
  stop_fleet
  half_rate=$(cat "$TMP"/half$r-*.out | sum_rate)
  ratio=$(echo "scale=3; $max_rate / $inproc_rate" | bc)
  line="$inproc_rate $max_rate $ratio $cpu_per_m $(field p99_ms "$TMP"/max$r-*.out) $half_rate $(field p50_ms "$TMP"/half$r-*.out) $(field p99_ms "$TMP"/half$r-*.out) $(field p999_ms "$TMP"/half$r-*.out) $ps_cpu_per_m"
  echo "round $r: in-process $inproc_rate keys/s; fleet $max_rate keys/s, ratio $ratio, CPU s/M keys $cpu_per_m, $per_push keys queued per push RPC; half load $half_rate keys/s pull p99 $(echo "$line" | cut -d' ' -f8) ms"
  rounds+=("$line")
done
med() { printf '%s\n' "${rounds[@]}" | cut -d' ' -f"$1" | median; }

echo "P=$P C=$C batch=$BATCH dim=$DIM seconds=$SECS backend=$BACKEND row_format=$ROW_FORMAT (durability WAL in $LOG, write-back $WRITE_BACK when ROCKSDB); medians of $REPS rounds"
echo "raw loopback TCP (iperf3):            $tcp_gbps Gbit/s"
echo "in-process $BACKEND table, $C procs:   $(med 1) keys/s (pull + push)"
echo "RPC fleet, max load:                  $(med 2) keys/s (pull + push), pull p99 $(med 5) ms"
echo "  ratio to in-process:                $(med 3) (per round: $(printf '%s\n' "${rounds[@]}" | cut -d' ' -f3 | tr '\n' ' '))"
echo "  CPU seconds per million keys:       $(med 4) (clients + pservers), $(med 10) (pservers alone)"
echo "RPC fleet at half load ($(med 6) keys/s): pull p50 $(med 7) ms, p99 $(med 8) ms, p999 $(med 9) ms"
