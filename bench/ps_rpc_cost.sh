#!/usr/bin/env bash
# The RPC path's CPU cost, for a machine shared with other work: the same
# loop as bench/ps_load.sh (batches of 4,096 unique Zipf keys, dim 16, pull +
# async push), on in-process memory tables and on P memory pservers with C
# client processes, each reported as keys per CPU-second of its own processes
# (clients' timed loops + pservers). On a busy machine throughput says more
# about the scheduler's share than about the code; CPU per key does not, and
# on an idle machine whose cores are all busy it sets the throughput ratio.
#
# usage: bench/ps_rpc_cost.sh [P=2] [C=2] [SECONDS=6]   (after `make build`)
set -Eeuo pipefail  # -E: the ERR trap fires inside functions too
trap '[ "$BASHPID" = "$$" ] && echo "bench/ps_rpc_cost.sh: failed at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."
P=${1:-2}; C=${2:-2}; SECS=${3:-6}
SAMPAN=bazel-bin/cli/sampan; CLIENT=bazel-bin/bench/ps_load_client
TMP=$(mktemp -d /tmp/sampan-rpccost.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

cpu_seconds() {  # utime + stime of a pid, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}
# "keys/s CPU-us-per-key" of client lines, $1 more CPU seconds added.
summary() { awk -v extra="$1" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  n = v["keys_pulled"] + v["keys_pushed"]; keys += n; rate += n / v["seconds"]; cpu += v["cpu_s"] }
  END { printf "%.0f %.4f", rate, (cpu + extra) * 1e6 / keys }'; }

for c in $(seq 1 "$C"); do
  "$CLIENT" --mode=inprocess --seconds="$SECS" --batch=4096 --dim=16 --seed="$c" > "$TMP/inproc-$c.out" &
  pids+=($!)
done
wait "${pids[@]}"; pids=()

cat > "$TMP/job.yaml" <<YAML
cluster: {num_pservers: $P, num_trainers: 1}
model: {type: FM, embedding_dim: 15}
table: {num_shards: 64, backend: MEMORY}
output_dir: $TMP/out
YAML
list=""
for i in $(seq 0 $((P - 1))); do
  "$SAMPAN" pserver --config="$TMP/job.yaml" --index="$i" --port_file="$TMP/port-$i" > "$TMP/pserver-$i.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 200); do [ -s "$TMP/port-$i" ] && break; sleep 0.05; done
  list="$list${list:+,}127.0.0.1:$(cat "$TMP/port-$i")"
done
server_cpu() { local s=0; for p in "${pids[@]}"; do s=$(echo "$s + $(cpu_seconds "$p")" | bc); done; echo "$s"; }
cpu0=$(server_cpu)  # idle until the clients have built their batches
clients=()
for c in $(seq 1 "$C"); do
  "$CLIENT" --pservers="$list" --seconds="$SECS" --batch=4096 --dim=16 --seed="$((c + 10))" > "$TMP/rpc-$c.out" &
  clients+=($!)
done
wait "${clients[@]}"
cpu1=$(server_cpu)

echo "P=$P C=$C batch=4096 dim=16 seconds=$SECS backend=MEMORY load=$(cut -d' ' -f1 /proc/loadavg)"
read -r in_rate in_us <<< "$(cat "$TMP"/inproc-*.out | summary 0)"
read -r rpc_rate rpc_us <<< "$(cat "$TMP"/rpc-*.out | summary "$(echo "$cpu1 - $cpu0" | bc)")"
echo "in-process tables, $C procs: $in_rate keys/s, $in_us CPU us per key"
echo "RPC fleet:                 $rpc_rate keys/s, $rpc_us CPU us per key (clients + pservers)"
echo "  CPU efficiency ratio (in-process us / RPC us): $(echo "scale=3; $in_us / $rpc_us" | bc)"
