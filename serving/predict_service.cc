#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/thread_priority.h"
#include "serving/request_batch.h"
#include "serving/serving.h"
#include "serving/serving_metrics.h"
#include "trainer/model_version.h"

namespace sampan {
ServingOptions ServingOptionsFromJob(const JobConfig& config) {
  const ServingConfig& s = config.serving();
  ServingOptions o;
  o.model = s.model().empty() ? VersionsRoot(config) : s.model();
  o.version = s.version();
  o.poll = absl::Seconds(s.poll_seconds());
  o.max_examples_per_request = s.max_examples_per_request();
  o.max_line_bytes = s.max_line_bytes();
  o.store_dir = s.store_dir();
  o.memory_budget_bytes = s.memory_budget_mb() << 20;
  o.shard_addresses.assign(s.shard_addresses().begin(),
                           s.shard_addresses().end());
  o.table_shards = std::max(1u, config.table().num_shards());
  o.lookup_deadline = absl::Seconds(s.lookup_deadline_seconds());
  o.scoring_threads = int(s.scoring_threads());
  return o;
}

FollowOptions PredictService::FollowOptionsOf(const ServingOptions& options) {
  FollowOptions f;
  f.model = options.model;
  f.version = options.version;
  f.poll = options.poll;
  f.on_load = RecordLoad;
  f.on_tick = [this](const ServedModel* served) { Tick(served); };
  if (!options.shard_addresses.empty()) {
    ShardClientOptions o;
    o.addresses = options.shard_addresses;
    o.table_shards = options.table_shards;
    o.deadline = options.lookup_deadline;
    o.credentials = options.shard_credentials;
    shards_ = std::make_shared<ShardClients>(o);
    f.wanted = [this] { return shards_->CommonVersion(); };
    f.bring_rows = [this](const std::vector<ChainMember>& chain)
        -> absl::StatusOr<std::shared_ptr<const RowSource>> {
      // Reachable shards, and the width of their rows.
      absl::StatusOr<uint64_t> common = shards_->CommonVersion();
      if (!common.ok()) return common.status();
      return shards_->RowsOf(chain.back().version.version());
    };
  } else if (!options.store_dir.empty()) {
    f.bring_rows = [this](const std::vector<ChainMember>& chain) {
      return BringRows(chain);
    };
    f.forget_rows = [this] { store_->Invalidate(); };
  }
  return f;
}

namespace {

// Nice value of the scoring workers: the server's gRPC threads (reading
// requests, parsing, looking rows up, writing answers) preempt them.
constexpr int kScoringNice = 5;

int ScoringWorkers(int scoring_threads) {
  return scoring_threads > 0 ? scoring_threads : UsableCores();
}

}  // namespace

PredictService::PredictService(const ServingOptions& options)
    : options_(options),
      follower_(FollowOptionsOf(options)),
      scoring_(ScoringWorkers(options.scoring_threads), "score", kScoringNice) {
}

absl::StatusOr<std::shared_ptr<const RowSource>> PredictService::BringRows(
    const std::vector<ChainMember>& chain) {
  if (store_ == nullptr) {
    VersionStoreOptions o;
    o.dir = options_.store_dir;
    o.memory_budget_bytes = options_.memory_budget_bytes;
    absl::StatusOr<std::unique_ptr<VersionStore>> store = VersionStore::Open(o);
    if (!store.ok()) return store.status();
    store_ = *std::move(store);
    store_open_ = store_.get();
  }
  return store_->Bring(chain);
}

void PredictService::Tick(const ServedModel* served) {
  RecordAge(served);
  if (VersionStore* store = store_open_.load()) RecordStore(store->stats());
}

PredictService::~PredictService() { Stop(); }

void PredictService::Start() { follower_.Start(); }
void PredictService::Stop() { follower_.Stop(); }
absl::Status PredictService::Refresh() { return follower_.Refresh(); }
bool PredictService::ready() const { return follower_.Current() != nullptr; }
std::shared_ptr<const ServedModel> PredictService::Current() const {
  return follower_.Current();
}

grpc::Status PredictService::Handle(const serving::PredictRequest& request,
                                    serving::PredictResponse* response,
                                    size_t* hits, size_t* misses) const {
  // One snapshot for the whole call: a swap meanwhile changes nothing here.
  const std::shared_ptr<const ServedModel> served = follower_.Current();
  if (served == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "no model version loaded yet");
  }
  if (request.version() != 0 && request.version() != served->version) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("version ", request.version(), " is not served; ",
                     served->description, " is"));
  }
  RequestLimits limits;
  limits.max_examples = options_.max_examples_per_request;
  limits.max_line_bytes = options_.max_line_bytes;
  absl::Status s = ScoreRequest(request, *served->scoring, limits, response,
                                hits, misses, &scoring_);
  if (!s.ok()) return StatusToGrpc(s);
  response->set_version(served->version);
  response->set_pass_name(served->pass);
  return grpc::Status::OK;
}

grpc::Status PredictService::Predict(grpc::ServerContext*,
                                     const serving::PredictRequest* request,
                                     serving::PredictResponse* response) {
  const absl::Time start = absl::Now();
  size_t hits = 0, misses = 0;
  grpc::Status status = Handle(*request, response, &hits, &misses);
  RecordPredict(status.error_code(), absl::Now() - start,
                status.ok() ? size_t(response->probabilities_size()) : 0, hits,
                misses);
  return status;
}

}  // namespace sampan
