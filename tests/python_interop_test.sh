#!/usr/bin/env bash
# A pserver driven by Python's grpcio (stubs generated from proto/ps.proto
# now), checked against the C++ client: both must read the same rows.
set -euo pipefail

SAMPAN="${TEST_SRCDIR}/${TEST_WORKSPACE}/cli/sampan"
PROBE="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/ps_probe"
SCRIPT="${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/ps_interop.py"
TMP="${TEST_TMPDIR}"

source "${TEST_SRCDIR}/${TEST_WORKSPACE}/tests/python_grpc.sh"
python_stubs "$TMP/gen" ps.proto

cat > "$TMP/job.yaml" <<YAML
cluster: {num_pservers: 1, num_trainers: 1}
model: {type: FM, embedding_dim: 4}
table: {num_shards: 8, optimizer: {type: SGD, learning_rate: 1.0}}
output_dir: $TMP/out
YAML
"$SAMPAN" pserver --config="$TMP/job.yaml" --index=0 \
  --port_file="$TMP/port" > "$TMP/pserver.log" 2>&1 &
pserver=$!
trap 'kill $pserver 2>/dev/null || true; wait $pserver 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$TMP/port" ] && break; sleep 0.05; done
address="127.0.0.1:$(cat "$TMP/port")"

keys="11 42 1234567890123 18446744073709551615"
"$PY" "$SCRIPT" "$TMP/gen" "$address" 5 $keys > "$TMP/python.txt"
"$PROBE" --pservers="$address" --num_shards=8 --row_dim=5 \
  --keys="$(echo $keys | tr ' ' ',')" > "$TMP/cpp.txt"

echo "python sees:"; cat "$TMP/python.txt"
echo "C++ sees:"; cat "$TMP/cpp.txt"
diff "$TMP/python.txt" "$TMP/cpp.txt"
# SGD with learning rate 1 from w = 0: w = -grad = (i + 1) / 8 for key i.
[ "$(awk 'NR == 3 { print $2 }' "$TMP/cpp.txt")" = "0.375" ]
kill -TERM $pserver; wait $pserver
echo "ok: python and C++ clients read identical rows; pserver exited cleanly"
