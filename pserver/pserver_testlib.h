// Test helpers for pserver tests: a Pserver served on a loopback port with
// a raw stub to it, fresh directories, and promtool's verdict on the
// process's metrics.
#ifndef SAMPAN_PSERVER_PSERVER_TESTLIB_H_
#define SAMPAN_PSERVER_PSERVER_TESTLIB_H_

#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "pserver/pserver.h"

namespace sampan {

// A Pserver serving its tables on a loopback port, and a raw stub to it.
class ServedPserver {
 public:
  ServedPserver(const PserverOptions& options,
                std::vector<std::unique_ptr<SparseTable>> tables)
      : pserver_(Pserver::Create(options, std::move(tables))) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(pserver_->service());
    server_ = builder.BuildAndStart();
    EXPECT_NE(port, 0);
    address_ = absl::StrCat("127.0.0.1:", port);
    stub_ = ps::SparseTable::NewStub(
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }
  ~ServedPserver() { Shutdown(); }

  void Shutdown() {
    if (server_ == nullptr) return;
    server_->Shutdown();
    pserver_->Stop();
    server_.reset();
  }

  Pserver& pserver() { return *pserver_; }
  const std::string& address() const { return address_; }
  ps::SparseTable::Stub& stub() { return *stub_; }

  // Pushes `grads` (the table's row width per key) with one show each.
  grpc::Status Push(uint32_t table, const std::vector<uint64_t>& keys,
                    const std::vector<float>& grads, uint64_t sequence,
                    float show = 1) {
    ps::PushRequest req;
    req.set_table_id(table);
    for (uint64_t key : keys) {
      req.add_keys(key);
      req.add_shows(show);
      req.add_clicks(0);
    }
    req.set_grads(std::string(reinterpret_cast<const char*>(grads.data()),
                              grads.size() * sizeof(float)));
    req.set_writer_id(7);
    req.set_sequence(sequence);
    ps::PushResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    return stub_->Push(&ctx, req, &resp);
  }

  // Reads without creating rows.
  std::vector<float> Pull(uint32_t table, uint64_t key) {
    ps::PullRequest req;
    req.set_table_id(table);
    req.add_keys(key);
    ps::PullResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    const grpc::Status s = stub_->Pull(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<float> out(resp.values().size() / sizeof(float));
    std::memcpy(out.data(), resp.values().data(), resp.values().size());
    return out;
  }

  grpc::Status Shrink(uint32_t table, ps::ShrinkResponse* resp) {
    ps::ShrinkRequest req;
    req.set_table_id(table);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(30));
    return stub_->Shrink(&ctx, req, resp);
  }

 private:
  std::unique_ptr<Pserver> pserver_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ps::SparseTable::Stub> stub_;
  std::string address_;
};

// A fresh directory under the test's temporary one.
// SetShards on `stub`: `owned` from now on, `frozen` of them moving out,
// at map `version` (proto/ps.proto), within `timeout`.
inline grpc::Status CallSetShards(ps::SparseTable::Stub& stub, uint64_t version,
                                  const std::vector<uint32_t>& owned,
                                  const std::vector<uint32_t>& frozen,
                                  absl::Duration timeout) {
  ps::SetShardsRequest req;
  req.set_shard_map_version(version);
  for (uint32_t s : owned) req.add_owned_shards(s);
  for (uint32_t s : frozen) req.add_frozen_shards(s);
  ps::SetShardsResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return stub.SetShards(&ctx, req, &resp);
}

inline std::string FreshDir(const std::string& name) {
  const std::string dir =
      absl::StrCat(testing::TempDir(), "/", name, "_",
                   testing::UnitTest::GetInstance()->random_seed());
  std::filesystem::remove_all(dir);
  return dir;
}

// `promtool check metrics` on the process's exposition; empty when clean.
inline std::string PromtoolComplaints() {
  const std::string dir = FreshDir("promtool");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/metrics.txt")
      << prometheus::TextSerializer().Serialize(MetricsRegistry().Collect());
  const std::string cmd =
      absl::StrCat("promtool check metrics < ", dir, "/metrics.txt 2>&1");
  FILE* out = popen(cmd.c_str(), "r");
  if (out == nullptr) return "cannot run promtool";
  std::string text;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof buf, out)) text.append(buf, n);
  const int rc = pclose(out);
  return rc == 0 ? "" : absl::StrCat("promtool (status ", rc, "): ", text);
}

// A table that forwards every call to `inner`; tests override the calls
// they want to hold up.
class ForwardingTable : public SparseTable {
 public:
  explicit ForwardingTable(std::unique_ptr<SparseTable> inner)
      : inner_(std::move(inner)) {}

  uint32_t pull_dim() const override { return inner_->pull_dim(); }
  absl::Status Pull(absl::Span<const uint64_t> keys, bool is_training,
                    float* out) override {
    return inner_->Pull(keys, is_training, out);
  }
  bool PullIfInMemory(absl::Span<const uint64_t> keys, bool is_training,
                      float* out) override {
    return inner_->PullIfInMemory(keys, is_training, out);
  }
  absl::StatusOr<PushResult> Push(const PushBatch& batch) override {
    return inner_->Push(batch);
  }
  absl::StatusOr<ShrinkResult> Shrink() override { return inner_->Shrink(); }
  absl::Status Flush() override { return inner_->Flush(); }
  absl::Status Snapshot(const std::string& dir) override {
    return inner_->Snapshot(dir);
  }
  absl::Status DeltaSnapshot(const std::string& path) override {
    return inner_->DeltaSnapshot(path);
  }
  absl::Status ApplyDelta(const std::string& path) override {
    return inner_->ApplyDelta(path);
  }
  absl::Status BulkLoad(absl::Span<const uint64_t> keys,
                        const float* values) override {
    return inner_->BulkLoad(keys, values);
  }
  TableStats Stats() const override { return inner_->Stats(); }
  absl::Status ExportShard(
      uint32_t shard, size_t max_rows,
      const std::function<absl::Status(const ShardChunk&)>& sink) override {
    return inner_->ExportShard(shard, max_rows, sink);
  }
  absl::StatusOr<std::unique_ptr<ShardImport>> ImportShard(
      uint32_t shard) override {
    return inner_->ImportShard(shard);
  }
  absl::StatusOr<uint64_t> DropShard(uint32_t shard) override {
    return inner_->DropShard(shard);
  }

 protected:
  const std::unique_ptr<SparseTable> inner_;
};

}  // namespace sampan

#endif  // SAMPAN_PSERVER_PSERVER_TESTLIB_H_
