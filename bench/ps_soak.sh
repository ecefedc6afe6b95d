#!/usr/bin/env bash
# Many connections on one pserver for a while: CLIENTS client processes
# (default 32, each its own gRPC connection) pull and push against one
# RocksDB-backed pserver (WAL) for SECONDS (default 120), paced so the
# machine is busy but not saturated. Reports client errors, the pserver's
# resident memory over time (bounded, not growing) and pull latency.
#
# usage: bench/ps_soak.sh [CLIENTS=32] [SECONDS=120] [KEYS_PER_SEC_PER_CLIENT=4000]
set -Eeuo pipefail  # -E: the ERR trap fires inside functions too
trap '[ "$BASHPID" = "$$" ] && echo "bench/ps_soak.sh: failed at line $LINENO" >&2' ERR
cd "$(dirname "$0")/.."
C=${1:-32}; SECS=${2:-120}; RATE=${3:-4000}
SAMPAN=bazel-bin/cli/sampan; CLIENT=bazel-bin/bench/ps_load_client
TMP=$(mktemp -d /tmp/sampan-soak.XXXXXX)
cleanup() { kill "$pserver" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT

cat > "$TMP/job.yaml" <<YAML
cluster: {num_pservers: 1, num_trainers: 1}
model: {type: FM, embedding_dim: 15}
table: {num_shards: 64, backend: ROCKSDB, durability: WAL,
        hot_tier_bytes: 268435456, data_dir: $TMP/tables}
output_dir: $TMP/out
YAML
"$SAMPAN" pserver --config="$TMP/job.yaml" --index=0 --port_file="$TMP/port" \
  > "$TMP/pserver.log" 2>&1 &
pserver=$!
for _ in $(seq 1 200); do [ -s "$TMP/port" ] && break; sleep 0.05; done
address="127.0.0.1:$(cat "$TMP/port")"

clients=()
for c in $(seq 1 "$C"); do
  "$CLIENT" --pservers="$address" --seconds="$SECS" --batch=1024 --dim=16 \
    --seed="$c" --batches=16 --key_space=2000000 \
    --target_keys_per_sec="$RATE" > "$TMP/client-$c.out" 2>&1 &
  clients+=($!)
done
rss=()
for _ in $(seq 1 $((SECS / 5))); do
  sleep 5
  rss+=("$(awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$pserver/status")")
done
errors=0
for p in "${clients[@]}"; do wait "$p" || errors=$((errors + 1)); done

keys=$(cat "$TMP"/client-*.out | awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
  n += v["keys_pulled"] + v["keys_pushed"] } END { print n }')
p99=$(cat "$TMP"/client-*.out | sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
p99max=$(cat "$TMP"/client-*.out | sed -n 's/.*p99_ms=\([0-9.]*\).*/\1/p' | sort -n | tail -1)
echo "clients=$C seconds=$SECS paced at $RATE pulled keys/s each, RocksDB WAL, 1 pserver"
echo "client errors:            $errors of $C"
echo "keys (pull + push):       $keys ($((keys / SECS)) per s)"
echo "pull p99, median client:  $p99 ms (worst client $p99max ms)"
echo "pserver RSS every 5 s, MiB: ${rss[*]}"
echo "first/last quarter mean RSS: $(printf '%s\n' "${rss[@]}" | awk '{ a[NR] = $1 } END { q = int(NR / 4); if (q < 1) q = 1; for (i = 1; i <= q; i++) { f += a[i]; l += a[NR - i + 1] } printf "%d / %d MiB", f / q, l / q }')"
[ "$errors" -eq 0 ]
