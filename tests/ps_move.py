"""Moves one shard of table 0 out of a pserver and back into it, through the
shard move RPCs (proto/ps.proto), as a coordinator would with two pservers:
freeze (SetShards), ExportShard, give the shard up (SetShards), ImportShard
of the exported chunks, own it again (SetShards). Prints the rows moved.

  ps_move.py GEN_DIR HOST:PORT NUM_SHARDS SHARD
"""
import sys

sys.path.insert(0, sys.argv[1])
import grpc  # noqa: E402
import ps_pb2  # noqa: E402
import ps_pb2_grpc  # noqa: E402

address, num_shards, shard = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
stub = ps_pb2_grpc.SparseTableStub(grpc.insecure_channel(address))
everything = list(range(num_shards))
others = [s for s in everything if s != shard]


def set_shards(version, owned, frozen=()):
    stub.SetShards(ps_pb2.SetShardsRequest(
        shard_map_version=version, owned_shards=owned, frozen_shards=frozen),
        timeout=10)


set_shards(2, everything, [shard])
chunks = list(stub.ExportShard(ps_pb2.ExportShardRequest(
    table_id=0, shard=shard, shard_map_version=2), timeout=30))
assert chunks and chunks[-1].last, "the export's last chunk is not marked"
set_shards(3, others)
resp = stub.ImportShard(iter(
    ps_pb2.ImportShardRequest(table_id=0, shard=shard, shard_map_version=3,
                              chunk=c) for c in chunks), timeout=30)
set_shards(4, everything)
print(resp.rows)
