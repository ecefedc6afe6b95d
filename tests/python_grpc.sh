# Sourced by the tests that drive a Sampan server from Python's grpcio:
# python_stubs DIR PROTO... generates PROTO's Python messages and stubs
# into DIR now (from proto/ in the runfiles), or fails the test naming what
# /usr/bin/python3 lacks.
PY=/usr/bin/python3
PROTO_DIR="${TEST_SRCDIR}/${TEST_WORKSPACE}/proto"

python_stubs() {
  local out=$1; shift
  if ! "$PY" -c "import grpc, grpc_tools" 2>/dev/null; then
    echo "FAIL: /usr/bin/python3 lacks grpcio/grpc_tools (scripts/install-deps.sh installs them)"
    exit 1
  fi
  mkdir -p "$out"
  local proto
  for proto in "$@"; do
    "$PY" -m grpc_tools.protoc -I"$PROTO_DIR" --python_out="$out" \
      --grpc_python_out="$out" "$PROTO_DIR/$proto"
  done
}
