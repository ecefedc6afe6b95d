#include "pserver/pserver.h"

#include <atomic>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

using grpc::ServerContext;
using grpc::Status;
using grpc::StatusCode;

Status Invalid(const std::string& message) {
  return Status(StatusCode::INVALID_ARGUMENT, message);
}

TableOptions TableOptionsFromConfig(const JobConfig& config) {
  TableOptions o;
  o.num_shards = config.table().num_shards();
  o.embedding_dim =
      config.model().type() == LR ? 0 : config.model().embedding_dim();
  const OptimizerConfig& opt = config.table().optimizer();
  o.rule = opt.type() == SGD ? OptimizerRule::kSgd : OptimizerRule::kAdagrad;
  o.learning_rate = opt.learning_rate();
  o.initial_accumulator = opt.initial_accumulator();
  o.init_range = opt.init_range();
  o.l2 = opt.l2();
  return o;
}

class SparseTableImpl final : public ps::SparseTable::Service {
 public:
  SparseTableImpl(const JobConfig& config, uint32_t index)
      : num_shards_(config.table().num_shards()),
        num_pservers_(config.cluster().num_pservers()),
        index_(index),
        table_(NewMemoryTable(TableOptionsFromConfig(config))) {}

  Status Pull(ServerContext*, const ps::PullRequest* req,
              ps::PullResponse* resp) override {
    if (Status s = CheckKeys("Pull", req->table_id(), req->keys()); !s.ok()) {
      return s;
    }
    const uint32_t dim = table_->pull_dim();
    std::string* values = resp->mutable_values();
    values->resize(size_t{req->keys_size()} * dim * sizeof(float));
    table_->Pull(req->keys(), req->is_training(),
                 reinterpret_cast<float*>(values->data()));
    resp->set_row_dim(dim);
    pulls_.fetch_add(1, std::memory_order_relaxed);
    pulled_keys_.fetch_add(req->keys_size(), std::memory_order_relaxed);
    return Status::OK;
  }

  Status Push(ServerContext*, const ps::PushRequest* req,
              ps::PushResponse* resp) override {
    if (Status s = CheckKeys("Push", req->table_id(), req->keys()); !s.ok()) {
      return s;
    }
    if (Status s = CheckPushShapes(*req); !s.ok()) return s;
    // Copy the gradients out: bytes fields carry no alignment guarantee.
    std::vector<float> grads(req->grads().size() / sizeof(float));
    std::memcpy(grads.data(), req->grads().data(), req->grads().size());
    PushBatch batch;
    batch.keys = req->keys();
    batch.grads = grads.data();
    batch.shows = req->shows().data();
    batch.clicks = req->clicks().data();
    batch.writer_id = req->trainer_id();
    batch.sequence = req->sequence();
    absl::StatusOr<PushResult> applied = table_->Push(batch);
    if (!applied.ok()) {
      return Invalid(absl::StrCat("Push: ", applied.status().message()));
    }
    resp->set_applied(applied->applied_keys);
    pushes_.fetch_add(1, std::memory_order_relaxed);
    pushed_keys_.fetch_add(req->keys_size(), std::memory_order_relaxed);
    return Status::OK;
  }

  Status Stats(ServerContext*, const ps::StatsRequest* req,
               ps::StatsResponse* resp) override {
    if (req->table_id() != 0) {
      return Invalid(absl::StrCat("Stats: unknown table_id ", req->table_id()));
    }
    const TableStats stats = table_->Stats();
    resp->set_rows(stats.rows);
    resp->set_memory_bytes(stats.memory_bytes);
    resp->set_pulls_total(pulls_.load());
    resp->set_pushes_total(pushes_.load());
    resp->set_pulled_keys_total(pulled_keys_.load());
    resp->set_pushed_keys_total(pushed_keys_.load());
    resp->set_num_shards(num_shards_);
    for (uint32_t s = 0; s < num_shards_; ++s) {
      if (PserverOfShard(s, num_pservers_) == index_) resp->add_owned_shards(s);
    }
    return Status::OK;
  }

 private:
  Status CheckKeys(const char* rpc, uint32_t table_id,
                   const google::protobuf::RepeatedField<uint64_t>& keys) {
    if (table_id != 0) {
      return Invalid(absl::StrCat(rpc, ": unknown table_id ", table_id,
                                  " (this job has table 0 only)"));
    }
    if (keys.size() > static_cast<int>(kMaxKeysPerRequest)) {
      return Invalid(absl::StrCat(rpc, ": ", keys.size(),
                                  " keys exceed the limit of ",
                                  kMaxKeysPerRequest, " per request"));
    }
    for (uint64_t key : keys) {
      const uint32_t shard = ShardOf(key, num_shards_);
      if (PserverOfShard(shard, num_pservers_) != index_) {
        return Invalid(absl::StrCat(
            rpc, ": key ", key, " routes to shard ", shard, " of pserver ",
            PserverOfShard(shard, num_pservers_), ", not pserver ", index_));
      }
    }
    return Status::OK;
  }

  Status CheckPushShapes(const ps::PushRequest& req) const {
    const size_t n = req.keys_size();
    const size_t want = n * table_->pull_dim() * sizeof(float);
    if (req.grads().size() != want) {
      return Invalid(absl::StrCat("Push: grads has ", req.grads().size(),
                                  " bytes, expected ", want, " (", n,
                                  " keys x ", table_->pull_dim(), " float32)"));
    }
    if (static_cast<size_t>(req.shows_size()) != n ||
        static_cast<size_t>(req.clicks_size()) != n) {
      return Invalid(absl::StrCat("Push: shows/clicks have ", req.shows_size(),
                                  "/", req.clicks_size(),
                                  " entries, expected one per key (", n, ")"));
    }
    return Status::OK;
  }

  const uint32_t num_shards_, num_pservers_, index_;
  std::unique_ptr<SparseTable> table_;
  std::atomic<uint64_t> pulls_{0}, pushes_{0}, pulled_keys_{0}, pushed_keys_{0};
};

}  // namespace

std::unique_ptr<ps::SparseTable::Service> NewSparseTableService(
    const JobConfig& config, uint32_t index) {
  return std::make_unique<SparseTableImpl>(config, index);
}

}  // namespace sampan
