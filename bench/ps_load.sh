#!/usr/bin/env bash
# The pserver fleet under load: P pservers and C client processes on
# loopback, Zipf keys, batches of BATCH unique keys of DIM floats, each step a
# pull plus an async push, pushes durable (RocksDB, WAL).
# Beside it in the same run: raw loopback TCP (iperf3) and the same loop on an
# in-process RocksDB table (C processes), so the RPC overhead shows as a ratio;
# then the RPC run again paced at half its maximum for the latency figure.
#
# usage: [BACKEND=ROCKSDB|MEMORY] [LOG=REDO_LOG|ROCKSDB_WAL]
#        [WRITE_BACK=SST_FILES|MEMTABLE] (the fleet's redo log write-back)
#        bench/ps_load.sh [P=2] [C=2] [SECONDS=10]
#        (after `make build`)
set -euo pipefail
trap 'echo "bench/ps_load.sh: failed at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."
P=${1:-2}; C=${2:-2}; SECS=${3:-10}; BACKEND=${BACKEND:-ROCKSDB}; LOG=${LOG:-REDO_LOG}; WRITE_BACK=${WRITE_BACK:-SST_FILES}; BATCH=4096; DIM=16; SHARDS=64
SAMPAN=bazel-bin/cli/sampan; CLIENT=bazel-bin/bench/ps_load_client
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
tcp_gbps=$(echo "$iperf_json" | /usr/bin/python3 -c \
  'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))')

# --- peer 2: the same loop on in-process tables of the same backend
sum_rate() { awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  rate += (v["keys_pulled"] + v["keys_pushed"]) / v["seconds"] } END { printf "%.0f", rate }'; }
inproc=()
for c in $(seq 1 "$C"); do
  dir_flag=""
  if [ "$BACKEND" = ROCKSDB ]; then
    dir_flag="--data_dir=$TMP/inproc-$c --durability_log=$LOG"
  fi
  "$CLIENT" --mode=inprocess $dir_flag --seconds="$SECS" \
    --batch=$BATCH --dim=$DIM --seed="$c" > "$TMP/inproc-$c.out" &
  inproc+=($!)
done
wait "${inproc[@]}"
inproc_rate=$(cat "$TMP"/inproc-*.out | sum_rate)

# --- the fleet
cat > "$TMP/job.yaml" <<YAML
cluster: {num_pservers: $P, num_trainers: 1}
model: {type: FM, embedding_dim: $((DIM - 1))}
table: {num_shards: $SHARDS, backend: $BACKEND, durability: WAL,
        durability_log: $LOG, write_back: $WRITE_BACK,
        hot_tier_bytes: 1073741824, data_dir: $TMP/tables}
output_dir: $TMP/out
YAML
addresses=()
ps_pids=()
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

run_clients() {  # target_keys_per_sec_per_client tag
  local cpu0=0 cpu1=0
  for p in "${ps_pids[@]}"; do cpu0=$(echo "$cpu0 + $(cpu_seconds "$p")" | bc); done
  local t0; t0=$(date +%s.%N)
  local clients=()
  for c in $(seq 1 "$C"); do
    /usr/bin/time -f "%U %S" -o "$TMP/$2-$c.time" "$CLIENT" --pservers="$list" \
      --seconds="$SECS" --batch=$BATCH --dim=$DIM --seed="$((c + 10))" \
      --target_keys_per_sec="$1" > "$TMP/$2-$c.out" &
    clients+=($!)
  done
  wait "${clients[@]}"
  for p in "${ps_pids[@]}"; do cpu1=$(echo "$cpu1 + $(cpu_seconds "$p")" | bc); done
  client_cpu=$(cat "$TMP"/$2-*.time | awk '{ s += $1 + $2 } END { print s }')
  server_cpu=$(echo "$cpu1 - $cpu0" | bc)
}

run_clients 0 max
max_rate=$(cat "$TMP"/max-*.out | sum_rate)
keys_total=$(cat "$TMP"/max-*.out | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  n += v["keys_pulled"] + v["keys_pushed"] } END { print n }')
cpu_per_m=$(echo "scale=3; ($client_cpu + $server_cpu) * 1000000 / $keys_total" | bc)
max_p99=$(cat "$TMP"/max-*.out | sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' | sort -n | tail -1)

half=$(echo "$max_rate / 4 / $C" | bc)  # half the combined rate, in pulled keys/s per client
run_clients "$half" half
half_rate=$(cat "$TMP"/half-*.out | sum_rate)
p50=$(cat "$TMP"/half-*.out | sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p' | sort -n | tail -1)
p99=$(cat "$TMP"/half-*.out | sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' | sort -n | tail -1)
p999=$(cat "$TMP"/half-*.out | sed -n 's/.*p999_ms=\([0-9.]*\).*/\1/p' | sort -n | tail -1)

echo "P=$P C=$C batch=$BATCH dim=$DIM seconds=$SECS backend=$BACKEND (durability WAL in $LOG, write-back $WRITE_BACK when ROCKSDB)"
echo "raw loopback TCP (iperf3):            $tcp_gbps Gbit/s"
echo "in-process $BACKEND table, $C procs:   $inproc_rate keys/s (pull + push)"
echo "RPC fleet, max load:                  $max_rate keys/s (pull + push), pull p99 ${max_p99} ms"
echo "  ratio to in-process:                $(echo "scale=3; $max_rate / $inproc_rate" | bc)"
echo "  CPU seconds per million keys:       $cpu_per_m (clients + pservers)"
echo "RPC fleet at half load ($half_rate keys/s): pull p50 ${p50} ms, p99 ${p99} ms, p999 ${p999} ms"
