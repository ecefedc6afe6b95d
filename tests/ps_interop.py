"""Talks to a running pserver with Python's grpcio, from stubs generated out
of proto/ps.proto at test time: the wire API is plain gRPC that any language
can use. Pushes known gradients, pulls them back, and prints the rows in the
format of tests/ps_probe so the shell test can compare them with the C++
client's view.

usage: ps_interop.py GEN_DIR ADDRESS DIM KEY...
"""
import struct
import sys

gen_dir, address, dim = sys.argv[1], sys.argv[2], int(sys.argv[3])
keys = [int(k) for k in sys.argv[4:]]
sys.path.insert(0, gen_dir)

import grpc  # noqa: E402
import ps_pb2  # noqa: E402
import ps_pb2_grpc  # noqa: E402

channel = grpc.insecure_channel(address)
stub = ps_pb2_grpc.SparseTableStub(channel)

# Row i gets the gradient -(i + 1) * (f + 1) / 8 in column f: exact in float32.
grads = b"".join(
    struct.pack("<%df" % dim, *[-(i + 1) * (f + 1) / 8.0 for f in range(dim)])
    for i in range(len(keys)))
push = ps_pb2.PushRequest(keys=keys, grads=grads, shows=[1.0] * len(keys),
                          clicks=[0.0] * len(keys), writer_id=77, sequence=1)
resp = stub.Push(push, timeout=10)
assert resp.applied == len(keys), resp
# The same sequence again is a replay: applied exactly once.
assert stub.Push(push, timeout=10).applied == 0

# A malformed push is refused with INVALID_ARGUMENT, naming the field.
bad = ps_pb2.PushRequest(keys=keys, grads=grads[:-1], shows=[1.0] * len(keys),
                         clicks=[0.0] * len(keys))
try:
    stub.Push(bad, timeout=10)
    raise SystemExit("malformed push was accepted")
except grpc.RpcError as e:
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
    assert "grads has" in e.details(), e.details()

pulled = stub.Pull(ps_pb2.PullRequest(keys=keys, is_training=False),
                   timeout=10)
assert pulled.row_dim == dim, pulled.row_dim
values = struct.unpack("<%df" % (dim * len(keys)), pulled.values)
for i, key in enumerate(keys):
    row = values[i * dim:(i + 1) * dim]
    print(key, " ".join("%.9g" % v for v in row))
