#include "serving/lookup_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_status.h"
#include "common/hash.h"
#include "serving/serving_metrics.h"

namespace sampan {
LookupService::LookupService(const LookupOptions& options)
    : options_(options), follower_(FollowOptionsOf()) {}

LookupService::~LookupService() { Stop(); }

FollowOptions LookupService::FollowOptionsOf() {
  FollowOptions f;
  f.model = options_.serving.model;
  f.version = options_.serving.version;
  f.poll = options_.serving.poll;
  f.on_load = [this](const absl::Status& status, const ServedModel* served) {
    RecordLoad(status, served);
    if (status.ok()) Keep();
  };
  f.on_tick = [this](const ServedModel* served) {
    RecordAge(served);
    if (VersionStore* store = store_open_.load()) RecordStore(store->stats());
  };
  f.bring_rows = [this](const std::vector<ChainMember>& chain)
      -> absl::StatusOr<std::shared_ptr<const RowSource>> {
    if (store_ == nullptr) {
      VersionStoreOptions o;
      o.dir = options_.serving.store_dir;
      o.memory_budget_bytes = options_.serving.memory_budget_bytes;
      const LookupOptions& l = options_;
      o.keep = [shard = l.shard, shards = l.shards,
                table_shards = l.serving.table_shards](uint64_t key) {
        return PserverOfShard(ShardOf(key, table_shards), shards) == shard;
      };
      o.keep_id = absl::StrCat("shard ", l.shard, " of ", l.shards, " by ",
                               l.serving.table_shards, " table shards");
      auto store = VersionStore::Open(o);
      if (!store.ok()) return store.status();
      store_ = *std::move(store);
      store_open_ = store_.get();
    }
    return store_->Bring(chain);
  };
  f.forget_rows = [this] { store_->Invalidate(); };
  return f;
}

void LookupService::Keep() {
  std::shared_ptr<const ServedModel> served = follower_.Current();
  if (served == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  // Versions above it were withdrawn (published again from an older state).
  kept_.erase(kept_.upper_bound(served->version), kept_.end());
  kept_[served->version] = std::move(served);
  while (kept_.size() > kKeptVersions) kept_.erase(kept_.begin());
}

void LookupService::Start() { follower_.Start(); }
void LookupService::Stop() { follower_.Stop(); }
absl::Status LookupService::Refresh() { return follower_.Refresh(); }
bool LookupService::ready() const { return follower_.Current() != nullptr; }

grpc::Status LookupService::Lookup(grpc::ServerContext*,
                                   const serving::LookupRequest* request,
                                   serving::LookupResponse* response) {
  const absl::Time start = absl::Now();
  grpc::Status status = DoLookup(*request, response);
  RecordLookupRpc("Lookup", status.error_code(), absl::Now() - start,
                  status.ok() ? size_t(request->keys_size()) : 0);
  return status;
}

grpc::Status LookupService::DoLookup(const serving::LookupRequest& request,
                                     serving::LookupResponse* response) {
  std::shared_ptr<const ServedModel> served;
  std::vector<uint64_t> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = kept_.find(request.version());
    if (it != kept_.end()) served = it->second;
    for (const auto& [version, model] : kept_) held.push_back(version);
  }
  if (held.empty()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("lookup shard ", options_.shard,
                                     ": no version loaded yet"));
  }
  if (served == nullptr) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("lookup shard ", options_.shard, " does not hold version ",
                     request.version(), "; it holds ",
                     absl::StrJoin(held, ", ")));
  }
  for (int j = 0; j < request.keys_size(); ++j) {
    const uint64_t key = request.keys(j);
    const uint32_t owner = PserverOfShard(
        ShardOf(key, options_.serving.table_shards), options_.shards);
    if (owner != options_.shard) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("keys[", j, "] = ", key, " belongs to lookup shard ",
                       owner, ", not ", options_.shard));
    }
  }
  const RowSource& rows = *served->scoring->rows;
  const size_t n = request.keys_size();
  const int d = rows.row_dim();
  std::string* out = response->mutable_rows();
  std::string* found = response->mutable_found();
  out->resize(n * d * sizeof(float));
  found->resize(n);
  absl::Status s = rows.Lookup(absl::MakeConstSpan(request.keys().data(), n),
                               reinterpret_cast<float*>(out->data()),
                               reinterpret_cast<uint8_t*>(found->data()));
  if (!s.ok()) return StatusToGrpc(s);
  response->set_row_dim(d);
  return grpc::Status::OK;
}

grpc::Status LookupService::Versions(grpc::ServerContext*,
                                     const serving::ShardVersionsRequest*,
                                     serving::ShardVersionsResponse* response) {
  const absl::Time start = absl::Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [version, model] : kept_) response->add_versions(version);
    response->set_shard(options_.shard);
    response->set_shards(options_.shards);
    if (!kept_.empty()) {
      response->set_row_dim(kept_.rbegin()->second->scoring->rows->row_dim());
    }
  }
  RecordLookupRpc("Versions", grpc::StatusCode::OK, absl::Now() - start, 0);
  return grpc::Status::OK;
}

}  // namespace sampan
