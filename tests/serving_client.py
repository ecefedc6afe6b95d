"""A `sampan serve` client in Python's grpcio, from stubs generated out of
proto/serving.proto at test time: the Predict API is plain gRPC.

usage: serving_client.py GEN_DIR ADDRESS health
         prints the gRPC health status of the server ("SERVING", ...)
       serving_client.py GEN_DIR ADDRESS predict DATA_FILE
         prints "version V pass P" then one probability per line of
         DATA_FILE (sent 200 lines a call), and checks that a malformed call
         is answered INVALID_ARGUMENT naming the example
       serving_client.py GEN_DIR ADDRESS probe DATA_FILE
         one Predict of DATA_FILE's first 50 lines (client deadline 30 s);
         prints "CODE SECONDS VERSION" (VERSION 0 on an error)
"""
import sys

gen_dir, address, command = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, gen_dir)

import grpc  # noqa: E402
import serving_pb2  # noqa: E402
import serving_pb2_grpc  # noqa: E402

channel = grpc.insecure_channel(address)

if command == "health":
    # grpc.health.v1.Health/Check with an empty HealthCheckRequest; the
    # response's field 1 is the status enum (1 SERVING, 2 NOT_SERVING).
    check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                request_serializer=lambda b: b,
                                response_deserializer=lambda b: b)
    reply = check(b"", timeout=10)
    status = reply[1] if len(reply) >= 2 and reply[0] == 0x08 else 0
    print({1: "SERVING", 2: "NOT_SERVING"}.get(status, "UNKNOWN"))
    sys.exit(0)

if command == "probe":
    import time
    stub = serving_pb2_grpc.PredictorStub(channel)
    with open(sys.argv[4]) as f:
        lines = [line.rstrip("\n") for line in f][:50]
    start = time.monotonic()
    try:
        reply = stub.Predict(serving_pb2.PredictRequest(lines=lines),
                             timeout=30)
        code, version = "OK", reply.version
    except grpc.RpcError as e:
        code, version = e.code().name, 0
    print("%s %.3f %d" % (code, time.monotonic() - start, version))
    sys.exit(0)

assert command == "predict", command
stub = serving_pb2_grpc.PredictorStub(channel)
with open(sys.argv[4]) as f:
    lines = [line.rstrip("\n") for line in f]
probs, versions = [], set()
for begin in range(0, len(lines), 200):
    reply = stub.Predict(
        serving_pb2.PredictRequest(lines=lines[begin:begin + 200]), timeout=10)
    assert len(reply.probabilities) == len(lines[begin:begin + 200])
    versions.add((reply.version, reply.pass_name))
    probs.extend(reply.probabilities)
assert len(versions) == 1, versions
version, pass_ = versions.pop()
print("version %d pass %s" % (version, pass_ or "-"))
for p in probs:
    print("%.9g" % p)

# A malformed call is refused alone, naming the example and the field.
try:
    stub.Predict(serving_pb2.PredictRequest(lines=[lines[0], "1\t2\t3"]),
                 timeout=10)
    raise SystemExit("a malformed line was accepted")
except grpc.RpcError as e:
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT, e
    assert "example 1: line: expected 40" in e.details(), e.details()
