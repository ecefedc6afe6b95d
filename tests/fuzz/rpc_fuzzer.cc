// libFuzzer target: arbitrary bytes as Pull, Push, Stats, Shrink and
// Checkpoint requests to a real pserver over loopback gRPC. Every call must
// be answered (OK or a clean error) and the server must stay up.
//
// A Checkpoint request names only an epoch; the pserver derives the
// directory (here a temporary one, epochs folded onto 8 names so that the
// snapshots stay few: a repeated one is refused because it exists).
#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "pserver/pserver.h"
#include "sparse_table/sparse_table.h"

namespace {

struct Fixture {
  std::unique_ptr<sampan::Pserver> pserver;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<sampan::ps::SparseTable::Stub> stub;

  Fixture() {
    sampan::TableOptions t;
    t.num_shards = 4;
    t.embedding_dim = 3;
    sampan::PserverOptions p;
    p.num_shards = 4;
    char dir[] = "/tmp/rpc_fuzzer.XXXXXX";
    const std::string root = mkdtemp(dir) != nullptr ? dir : "/tmp";
    p.checkpoint_dir = [root](uint64_t epoch) {
      return root + "/ckpt-" + std::to_string(epoch % 8);
    };
    pserver = sampan::Pserver::Create(p, std::move(*sampan::NewTable(t)));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.SetMaxReceiveMessageSize(256 << 20);
    builder.RegisterService(pserver->service());
    server = builder.BuildAndStart();
    stub = sampan::ps::SparseTable::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                            grpc::InsecureChannelCredentials()));
  }
};

template <typename Call>
void MustAnswer(Call call) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::Status s = call(&ctx);
  // A deadline or an unavailable server means the handler hung or died.
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
      s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* f = new Fixture;
  if (size == 0) return 0;
  const uint8_t kind = data[0] % 5;
  ++data;
  --size;
  if (kind == 0) {
    sampan::ps::PushRequest req;
    if (!req.ParseFromArray(data, size)) return 0;
    sampan::ps::PushResponse resp;
    MustAnswer(
        [&](grpc::ClientContext* c) { return f->stub->Push(c, req, &resp); });
  } else if (kind == 1) {
    sampan::ps::PullRequest req;
    if (!req.ParseFromArray(data, size)) return 0;
    sampan::ps::PullResponse resp;
    MustAnswer(
        [&](grpc::ClientContext* c) { return f->stub->Pull(c, req, &resp); });
  } else if (kind == 2) {
    sampan::ps::StatsRequest req;
    if (!req.ParseFromArray(data, size)) return 0;
    sampan::ps::StatsResponse resp;
    MustAnswer(
        [&](grpc::ClientContext* c) { return f->stub->Stats(c, req, &resp); });
  } else if (kind == 3) {
    sampan::ps::ShrinkRequest req;
    if (!req.ParseFromArray(data, size)) return 0;
    sampan::ps::ShrinkResponse resp;
    MustAnswer(
        [&](grpc::ClientContext* c) { return f->stub->Shrink(c, req, &resp); });
  } else {
    sampan::ps::CheckpointRequest req;
    if (!req.ParseFromArray(data, size)) return 0;
    sampan::ps::CheckpointResponse resp;
    MustAnswer([&](grpc::ClientContext* c) {
      return f->stub->Checkpoint(c, req, &resp);
    });
  }
  return 0;
}
