// Rows/s of moving one shard between two pservers (ExportShard streamed into
// ImportShard over loopback gRPC, the client forwarding each chunk as a
// coordinator would), for the memory and the RocksDB backend (redo log, the
// default), beside the same machine's raw snapshot + restore of the same
// rows in the same run (Snapshot, then RestoreSnapshot and reopen: for
// RocksDB a checkpoint's hard links copied and the database opened; for
// memory the snapshot file written and loaded). The table holds one shard's
// rows only (keys picked in shard 0), created by pushes (dim 16, Adagrad,
// every row with its embedding), so both paths move the same rows with their
// full state. Reps alternate move and peer; medians are printed.
//
// --other_rows=N adds N rows of the other shards to both tables (a target
// pserver serves shards of its own): a move should cost what the moved
// shard holds, not what the tables hold. The peer then copies them too.
//
//   shard_move_bench [--backend=memory|rocksdb] [--rows=1500000] [--reps=3]
//                    [--other_rows=0] [--dir=/tmp/shard_move_bench]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/flags.h"
#include "common/hash.h"
#include "proto/ps.grpc.pb.h"
#include "pserver/pserver.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

constexpr uint32_t kShards = 4;

TableOptions Options(Backend backend, const std::string& dir) {
  TableOptions o;
  o.num_shards = kShards;
  o.embedding_dim = 16;
  o.rule = OptimizerRule::kAdagrad;
  o.backend = backend;
  o.data_dir = dir;
  o.hot_tier_bytes = 512ull << 20;
  return o;
}

struct Served {
  std::unique_ptr<Pserver> pserver;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<ps::SparseTable::Stub> stub;
  ~Served() {
    server->Shutdown();
    pserver->Stop();
  }
};

std::unique_ptr<Served> Serve(std::unique_ptr<SparseTable> table,
                              uint32_t index, std::vector<uint32_t> owned,
                              bool inline_run) {
  auto s = std::make_unique<Served>();
  PserverOptions o;
  o.index = index;
  o.num_shards = kShards;
  o.owned_shards = std::move(owned);
  o.run_inline = inline_run;
  s->pserver = Pserver::Create(o, std::move(table));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.RegisterService(s->pserver->service());
  s->server = builder.BuildAndStart();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  s->stub = ps::SparseTable::NewStub(
      grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port),
                                grpc::InsecureChannelCredentials(), args));
  return s;
}

std::chrono::system_clock::time_point In(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

// Creates the rows of `keys` by pushes of 4,096 keys; false on an error.
bool Fill(SparseTable* table, const std::vector<uint64_t>& keys,
          uint64_t writer) {
  const uint32_t pd = table->pull_dim();
  std::vector<float> grads(4096 * pd, 0.01f), shows(4096, 1), clicks(4096, 0);
  uint64_t seq = 0;
  for (size_t at = 0; at < keys.size(); at += 4096) {
    PushBatch b;
    b.keys = absl::MakeConstSpan(keys).subspan(at, 4096);
    b.grads = grads.data();
    b.shows = shows.data();
    b.clicks = clicks.data();
    b.writer_id = writer;
    b.sequence = ++seq;
    if (!table->Push(b).ok()) return false;
  }
  return table->Flush().ok();
}

bool Check(const grpc::Status& s, const char* what) {
  if (!s.ok())
    std::fprintf(stderr, "%s: %s\n", what, s.error_message().c_str());
  return s.ok();
}

// Export from a into an import of b, chunk by chunk; rows moved or -1.
int64_t Move(Served& a, Served& b, uint64_t version) {
  grpc::ClientContext ectx, ictx;
  ectx.set_deadline(In(600));
  ictx.set_deadline(In(600));
  ps::ExportShardRequest ereq;
  ereq.set_shard(0);
  ereq.set_shard_map_version(version);
  auto reader = a.stub->ExportShard(&ectx, ereq);
  ps::ImportShardResponse iresp;
  auto writer = b.stub->ImportShard(&ictx, &iresp);
  ps::ImportShardRequest ireq;
  ireq.set_shard(0);
  ireq.set_shard_map_version(version);
  while (reader->Read(ireq.mutable_chunk())) {
    if (!writer->Write(ireq)) break;
  }
  writer->WritesDone();
  if (!Check(reader->Finish(), "ExportShard") ||
      !Check(writer->Finish(), "ImportShard")) {
    return -1;
  }
  return iresp.rows();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Run(int argc, char** argv) {
  auto flags = Flags::Parse(argc, argv, 1,
                            {"backend", "rows", "reps", "dir", "other_rows"});
  if (!flags.ok()) {
    std::fprintf(stderr, "%s\n", flags.status().ToString().c_str());
    return 2;
  }
  const bool rocks = flags->Get("backend", "memory") == "rocksdb";
  const Backend backend = rocks ? Backend::kRocksDb : Backend::kMemory;
  const uint64_t rows = *flags->GetInt("rows", 1500000);
  const int reps = *flags->GetInt("reps", 3);
  const uint64_t other_rows = *flags->GetInt("other_rows", 0);
  const std::string root = flags->Get("dir", "/tmp/shard_move_bench");
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);

  auto source = NewTable(Options(backend, root + "/a"));
  auto target = NewTable(Options(backend, root + "/b"));
  if (!source.ok() || !target.ok()) return 1;
  // The pserver will own it; the bench keeps a pointer for the peer's
  // snapshot (taken while the shard is frozen: nothing writes meanwhile).
  SparseTable* table = source->get();
  // Rows by pushes: batches of 4,096 keys of shard 0, then of the others.
  std::vector<uint64_t> keys, others;
  for (uint64_t k = 1; keys.size() < rows || others.size() < other_rows; ++k) {
    std::vector<uint64_t>& to = ShardOf(k, kShards) == 0 ? keys : others;
    if (to.size() < (&to == &keys ? rows : other_rows)) to.push_back(k);
  }
  const absl::Time fill = absl::Now();
  if (!Fill(table, keys, 1) || !Fill(table, others, 2) ||
      !Fill(target->get(), others, 2)) {
    return 1;
  }
  std::printf(
      "%s: filled %zu rows of shard 0 and %zu of the others in "
      "%.1f s\n",
      rocks ? "rocksdb" : "memory", keys.size(), others.size(),
      absl::ToDoubleSeconds(absl::Now() - fill));

  auto a = Serve(std::move(*source), 0, {0, 1, 2, 3}, !rocks);
  auto b = Serve(std::move(*target), 1, {1, 2, 3}, !rocks);
  ps::SetShardsRequest freeze;
  freeze.set_shard_map_version(2);
  for (uint32_t s = 0; s < kShards; ++s) freeze.add_owned_shards(s);
  freeze.add_frozen_shards(0);
  ps::SetShardsResponse freeze_resp;
  grpc::ClientContext fctx;
  fctx.set_deadline(In(10));
  if (!Check(a->stub->SetShards(&fctx, freeze, &freeze_resp), "SetShards")) {
    return 1;
  }

  std::vector<double> move_rate, peer_rate;
  int64_t moved = 0;
  for (int r = 0; r < reps; ++r) {
    const absl::Time t0 = absl::Now();
    moved = Move(*a, *b, 2);
    if (moved < 0) return 1;
    const double move_s = absl::ToDoubleSeconds(absl::Now() - t0);
    move_rate.push_back(moved / move_s);

    // The peer: a raw snapshot of the same (frozen) table, restored and
    // opened.
    const std::string snap = absl::StrCat(root, "/snap-", r);
    const std::string restored = absl::StrCat(root, "/restored-", r);
    const absl::Time t1 = absl::Now();
    if (absl::Status st = table->Snapshot(snap); !st.ok()) {
      std::fprintf(stderr, "snapshot: %s\n", st.ToString().c_str());
      return 1;
    }
    if (rocks) {
      if (absl::Status st = RestoreSnapshot(snap, restored); !st.ok()) return 1;
    }
    {
      auto copy = NewTable(Options(backend, rocks ? restored : snap));
      if (!copy.ok()) {
        std::fprintf(stderr, "restore: %s\n", copy.status().ToString().c_str());
        return 1;
      }
    }
    const double peer_s = absl::ToDoubleSeconds(absl::Now() - t1);
    peer_rate.push_back(moved / peer_s);
    std::filesystem::remove_all(snap);
    std::filesystem::remove_all(restored);
    std::printf(
        "rep %d: move %lld rows in %.3f s = %.0f rows/s; snapshot+restore "
        "%.3f s = %.0f rows/s\n",
        r, static_cast<long long>(moved), move_s, move_rate.back(), peer_s,
        peer_rate.back());
  }
  const double move = Median(move_rate), peer = Median(peer_rate);
  std::printf(
      "%s median of %d: move %.0f rows/s, snapshot+restore %.0f rows/s, "
      "ratio %.3f\n",
      rocks ? "rocksdb" : "memory", reps, move, peer, move / peer);
  return 0;
}

}  // namespace
}  // namespace sampan

int main(int argc, char** argv) { return sampan::Run(argc, argv); }
