#include "pserver/pserver.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/coordinator_epoch.h"
#include "common/file_digest.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/ps_wire.h"
#include "common/shard_map.h"
#include "pserver/disk_guard.h"
#include "pserver/metrics.h"
#include "pserver/shard_mover.h"
#include "pserver/shard_ownership.h"
#include "pserver/worker_pool.h"

namespace sampan {
namespace {

using grpc::CallbackServerContext;
using grpc::ServerUnaryReactor;
using grpc::Status;
using grpc::StatusCode;

Status Invalid(const std::string& message) {
  return Status(StatusCode::INVALID_ARGUMENT, message);
}

// The rows of a push that stay when the keys of the shards in `moving`
// (ascending) are taken out: `batch` is pointed at them, in `rest`.
struct PartialPush {
  std::vector<uint64_t> keys;
  std::vector<float> grads, shows, clicks;
};
void WithoutShards(const google::protobuf::RepeatedField<uint64_t>& keys,
                   const std::vector<uint32_t>& moving, uint32_t num_shards,
                   uint32_t dim, PartialPush* rest, PushBatch* batch) {
  for (int i = 0; i < keys.size(); ++i) {
    const uint32_t shard = ShardOf(keys[i], num_shards);
    if (std::binary_search(moving.begin(), moving.end(), shard)) continue;
    rest->keys.push_back(keys[i]);
    const float* grad = batch->grads + static_cast<size_t>(i) * dim;
    rest->grads.insert(rest->grads.end(), grad, grad + dim);
    rest->shows.push_back(batch->shows[i]);
    rest->clicks.push_back(batch->clicks[i]);
  }
  batch->keys = rest->keys;
  batch->grads = rest->grads.data();
  batch->shows = rest->shows.data();
  batch->clicks = rest->clicks.data();
}

// Pull is a raw method: its response is built in place (common/ps_wire.h).
// The shard move methods stay synchronous (ShardMover: they block for the
// length of a shard, on gRPC's synchronous threads).
using Ps = ps::SparseTable;
using CallbackMethods =
    Ps::WithRawCallbackMethod_Pull<Ps::WithCallbackMethod_Push<
        Ps::WithCallbackMethod_Stats<Ps::WithCallbackMethod_Checkpoint<
            Ps::WithCallbackMethod_Shrink<Ps::Service>>>>>;

class PserverImpl final : public Pserver, public CallbackMethods {
 public:
  PserverImpl(const PserverOptions& options,
              std::vector<std::unique_ptr<SparseTable>> tables)
      : options_(options),
        ownership_(options.index, options.num_shards, options.owned_shards,
                   options.shard_map_version),
        tables_(std::move(tables)),
        disk_(options.data_dir, options.min_free_disk_bytes),
        metrics_(PserverMetrics::Get()),
        mover_(&ownership_, &tables_, metrics_),
        pull_pool_(options.num_workers, options.max_queued_requests, "ps-pull"),
        push_pool_(options.num_workers, options.max_queued_requests,
                   "ps-push") {
    metrics_->shard_map_version->Set(ownership_.version());
  }

  grpc::Service* service() override { return this; }

  void RefreshGauges() override {
    metrics_->queue_depth->Set(pull_pool_.queued() + push_pool_.queued());
    std::lock_guard<std::mutex> lock(gauges_mu_);
    // A shrink holds every shard lock of its table, for minutes when the
    // table is a large RocksDB one, and Stats waits for those locks; so
    // would the caller (sampan pserver's tick, which also heartbeats to the
    // coordinator). The table gauges keep their values until the shrink
    // refreshes them itself.
    if (shrinks_running_ > 0) return;
    TableStats sum;
    for (const auto& table : tables_) {
      const TableStats stats = table->Stats();
      sum.rows += stats.rows;
      sum.dirty_rows += stats.dirty_rows;
      sum.redo_log_bytes += stats.redo_log_bytes;
    }
    metrics_->table_rows->Set(sum.rows);
    metrics_->table_dirty_rows->Set(sum.dirty_rows);
    metrics_->table_redo_log_bytes->Set(sum.redo_log_bytes);
  }

  PserverLoad Load() const override {
    PserverLoad load;
    load.rows = static_cast<uint64_t>(metrics_->table_rows->Value());
    load.keys_pulled = static_cast<uint64_t>(
        metrics_->keys[static_cast<int>(Method::kPull)]->Value());
    load.keys_pushed = static_cast<uint64_t>(
        metrics_->keys[static_cast<int>(Method::kPush)]->Value());
    return load;
  }

  void Stop() override {
    pull_pool_.Stop();
    push_pool_.Stop();
    // Dirty hot-tier rows reach the store now rather than by log replay.
    for (size_t i = 0; i < tables_.size(); ++i) {
      if (absl::Status s = tables_[i]->Flush(); !s.ok()) {
        SAMPAN_LOG(ERROR) << "flushing table " << i
                          << " at shutdown: " << s.message();
      }
    }
  }

  // A pull is parsed and checked here, on gRPC's thread, and answered here
  // when the table has every row in memory: no hand-off to the pull pool and
  // back (fleet throughput +13%, bench/RESULTS.md). One that must read
  // RocksDB goes to the pool, which may block on the disk, with its parsed
  // request.
  ServerUnaryReactor* Pull(CallbackServerContext* context,
                           const grpc::ByteBuffer* req,
                           grpc::ByteBuffer* resp) override {
    const absl::Time start = absl::Now();
    auto pull = std::make_shared<ParsedPull>();
    const Status parsed = ParsePull(*req, pull.get());
    if (!parsed.ok() ||
        Table(pull->req.table_id())
            .PullIfInMemory(pull->req.keys(), pull->req.is_training(),
                            pull->rows())) {
      return Dispatch(
          context, Method::kPull,
          [&] { return parsed.ok() ? AnswerPull(*pull, resp) : parsed; }, start,
          /*here=*/true);
    }
    return Dispatch(
        context, Method::kPull,
        [this, pull, resp] { return PullFromTable(*pull, resp); }, start);
  }

  ServerUnaryReactor* Push(CallbackServerContext* context,
                           const ps::PushRequest* req,
                           ps::PushResponse* resp) override {
    return Dispatch(context, Method::kPush,
                    [this, req, resp] { return DoPush(*req, resp); });
  }

  // Runs on the push pool: the snapshot waits for the pushes being applied
  // and a trainer pauses its pushes for a checkpoint anyway.
  ServerUnaryReactor* Checkpoint(CallbackServerContext* context,
                                 const ps::CheckpointRequest* req,
                                 ps::CheckpointResponse* resp) override {
    if (Status s = CheckCoordinator("Checkpoint", *context); !s.ok()) {
      ServerUnaryReactor* reactor = context->DefaultReactor();
      reactor->Finish(s);
      return reactor;
    }
    return OnPushPool(context, "Checkpoint",
                      [this, req, resp] { return DoCheckpoint(*req, resp); });
  }

  // Runs where pushes run (the push pool, or here with run_inline): the
  // table locks every shard for the whole shrink, so the pushes wait for it
  // either way.
  ServerUnaryReactor* Shrink(CallbackServerContext* context,
                             const ps::ShrinkRequest* req,
                             ps::ShrinkResponse* resp) override {
    if (Status s = CheckTableId("Shrink", req->table_id()); !s.ok()) {
      ServerUnaryReactor* reactor = context->DefaultReactor();
      reactor->Finish(s);
      return reactor;
    }
    return OnPushPool(
        context, "Shrink", [this, req, resp] { return DoShrink(*req, resp); },
        /*here=*/options_.run_inline);
  }

  ServerUnaryReactor* Stats(CallbackServerContext* context,
                            const ps::StatsRequest* req,
                            ps::StatsResponse* resp) override {
    ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(DoStats(*req, resp));
    return reactor;
  }

  Status SetShards(grpc::ServerContext* context,
                   const ps::SetShardsRequest* req,
                   ps::SetShardsResponse* resp) override {
    if (Status s = CheckCoordinator("SetShards", *context); !s.ok()) return s;
    return mover_.SetShards(*context, *req, resp);
  }
  Status ExportShard(grpc::ServerContext* context,
                     const ps::ExportShardRequest* req,
                     grpc::ServerWriter<ps::ShardChunk>* writer) override {
    if (Status s = CheckCoordinator("ExportShard", *context); !s.ok()) {
      return s;
    }
    return mover_.Export(*context, *req, writer);
  }
  Status ImportShard(grpc::ServerContext* context,
                     grpc::ServerReader<ps::ImportShardRequest>* reader,
                     ps::ImportShardResponse* resp) override {
    if (Status s = CheckCoordinator("ImportShard", *context); !s.ok()) {
      return s;
    }
    return mover_.Import(*context, reader, resp);
  }
  Status DropShard(grpc::ServerContext* context,
                   const ps::DropShardRequest* req,
                   ps::DropShardResponse* resp) override {
    if (Status s = CheckCoordinator("DropShard", *context); !s.ok()) return s;
    return mover_.Drop(*context, *req, resp);
  }

  grpc::Status ApplyShardMap(const ps::SetShardsRequest& req) override {
    return ownership_.Set(req, absl::Now() + absl::Seconds(30));
  }

 private:
  // A coordinator that was replaced (stopped, then woken up) must neither
  // take snapshots nor move shards (common/coordinator_epoch.h): a call
  // carrying an older epoch than this pserver has seen is refused.
  Status CheckCoordinator(const char* rpc,
                          const grpc::ServerContextBase& context) {
    const uint64_t theirs = CoordinatorEpochIn(context.client_metadata());
    uint64_t newest = coordinator_epoch_.load();
    if (options_.newest_coordinator_epoch) {
      newest = std::max(newest, options_.newest_coordinator_epoch());
    }
    if (theirs < newest) {
      return Status(
          StatusCode::FAILED_PRECONDITION,
          absl::StrCat(rpc, ": from coordinator epoch ", theirs,
                       ", which coordinator epoch ", newest, " replaced"));
    }
    RaiseEpoch(coordinator_epoch_, theirs);
    return Status::OK;
  }

  // Runs `work` on the pool (or inline) and finishes the call with its
  // status; refuses with RESOURCE_EXHAUSTED when the pool's queue is full.
  // `here`: on this thread even when the table is not a memory one.
  template <typename Work>
  ServerUnaryReactor* Dispatch(CallbackServerContext* context, Method method,
                               Work work, absl::Time start = absl::Now(),
                               bool here = false) {
    ServerUnaryReactor* reactor = context->DefaultReactor();
    auto run = [this, context, reactor, method, start, work] {
      const Status status = work();
      if (status.error_code() == StatusCode::ABORTED) {  // not our shard
        context->AddTrailingMetadata(kShardMapVersionKey,
                                     absl::StrCat(ownership_.version()));
      }
      metrics_->Record(method, status, absl::Now() - start);
      reactor->Finish(status);
    };
    if (options_.run_inline || here) {
      run();
      return reactor;
    }
    // Pulls and pushes queue separately: a durable push waits on the log,
    // and pulls (which a trainer blocks on) should not wait behind it.
    WorkerPool& pool = method == Method::kPull ? pull_pool_ : push_pool_;
    const bool queued = pool.Submit(std::move(run));
    metrics_->queue_depth->Set(pull_pool_.queued() + push_pool_.queued());
    if (!queued) {
      const Status busy(StatusCode::RESOURCE_EXHAUSTED,
                        "pserver overloaded: request queue full, retry later");
      metrics_->Record(method, busy, absl::Now() - start);
      reactor->Finish(busy);
    }
    return reactor;
  }

  // Runs `work` on the push pool (or on this thread when `here`) and
  // finishes the call with its status; refuses with RESOURCE_EXHAUSTED,
  // naming `rpc`, when the pool's queue is full. For the table-wide RPCs,
  // which Dispatch's per-method metrics do not count.
  template <typename Work>
  ServerUnaryReactor* OnPushPool(CallbackServerContext* context,
                                 const char* rpc, Work work,
                                 bool here = false) {
    ServerUnaryReactor* reactor = context->DefaultReactor();
    auto run = [reactor, work] { reactor->Finish(work()); };
    if (here) {
      run();
    } else if (!push_pool_.Submit(std::move(run))) {
      reactor->Finish(
          Status(StatusCode::RESOURCE_EXHAUSTED,
                 absl::StrCat(rpc, ": request queue full, retry later")));
    }
    return reactor;
  }

  struct ParsedPull {
    ps::PullRequest req;
    std::optional<PullResponseWriter> values;  // sized for req's rows
    // Compact values: the table's float32 rows, encoded into `values` when
    // answered.
    std::vector<float> scratch;
    float* rows() {
      return scratch.empty() ? values->values() : scratch.data();
    }
  };

  Status ParsePull(const grpc::ByteBuffer& raw, ParsedPull* pull) {
    grpc::ByteBuffer shared(raw);  // Deserialize consumes its buffer
    if (!grpc::SerializationTraits<ps::PullRequest>::Deserialize(&shared,
                                                                 &pull->req)
             .ok()) {
      return Invalid("Pull: the request is not a PullRequest");
    }
    if (Status s = CheckKeys("Pull", pull->req.table_id(), pull->req.keys());
        !s.ok()) {
      return s;
    }
    if (Status s = ownership_.CheckRead("Pull", pull->req.keys()); !s.ok()) {
      return s;
    }
    const SparseTable& table = Table(pull->req.table_id());
    const uint32_t dim = table.pull_dim();
    const size_t rows = pull->req.keys_size();
    const RowFormat format = pull->req.compact_values()
                                 ? WirePullFormat(table.row_format(), dim)
                                 : RowFormat::kFp32;
    pull->values.emplace(rows, dim, format);
    if (format != RowFormat::kFp32) pull->scratch.resize(rows * dim);
    return Status::OK;
  }

  Status PullFromTable(ParsedPull& pull, grpc::ByteBuffer* resp) {
    absl::Status pulled =
        Table(pull.req.table_id())
            .Pull(pull.req.keys(), pull.req.is_training(), pull.rows());
    if (!pulled.ok()) {
      // Storage failures are the server's, not the request's: the client may
      // retry elsewhere or later.
      return Status(StatusCode::UNAVAILABLE,
                    absl::StrCat("Pull: table: ", pulled.message()));
    }
    return AnswerPull(pull, resp);
  }

  // The rows are in pull.values.
  Status AnswerPull(ParsedPull& pull, grpc::ByteBuffer* resp) {
    if (!pull.scratch.empty()) pull.values->EncodeFrom(pull.scratch.data());
    *resp = pull.values->Release();
    const uint32_t dim = Table(pull.req.table_id()).pull_dim();
    metrics_->AddKeys(Method::kPull, pull.req.keys_size(),
                      size_t{static_cast<size_t>(pull.req.keys_size())} *
                          WireRowWords(pull.values->format(), dim) *
                          sizeof(float));
    return Status::OK;
  }

  Status DoPush(const ps::PushRequest& req, ps::PushResponse* resp) {
    if (Status s = CheckKeys("Push", req.table_id(), req.keys()); !s.ok()) {
      return s;
    }
    if (Status s = CheckPushShapes(req); !s.ok()) return s;
    if (Status s = CheckDisk("Push"); !s.ok()) return s;
    // Counted as applying on its shards until answered, so that a freeze
    // (SetShards) can wait for it.
    ShardOwnership::PushGuard applying;
    std::vector<uint32_t> moving;
    if (Status s = ownership_.BeginPush("Push", req.keys(), &applying,
                                        req.partial_ok() ? &moving : nullptr);
        !s.ok()) {
      return s;
    }
    // Bytes fields carry no alignment guarantee, though the heap buffer
    // behind one nearly always is aligned: copy only when it is not.
    const float* grads = reinterpret_cast<const float*>(req.grads().data());
    std::vector<float> aligned;
    if (reinterpret_cast<uintptr_t>(grads) % alignof(float) != 0) {
      aligned.resize(req.grads().size() / sizeof(float));
      std::memcpy(aligned.data(), req.grads().data(), req.grads().size());
      grads = aligned.data();
    }
    PushBatch batch;
    batch.keys = req.keys();
    batch.grads = grads;
    batch.shows = req.shows().data();
    batch.clicks = req.clicks().data();
    batch.writer_id = req.writer_id();
    batch.sequence = req.sequence();
    // Shards frozen for a move keep their keys for a resend: the rest of
    // the request is applied as a request of its own, same sequence.
    PartialPush rest;
    if (!moving.empty()) {
      resp->mutable_moving_shards()->Add(moving.begin(), moving.end());
      WithoutShards(req.keys(), moving, ownership_.num_shards(),
                    Table(req.table_id()).pull_dim(), &rest, &batch);
      if (batch.keys.empty()) return Status::OK;
    }
    absl::StatusOr<PushResult> applied = Table(req.table_id()).Push(batch);
    if (!applied.ok()) {
      metrics_->rejected_gradients->Increment();
      return Invalid(absl::StrCat("Push: ", applied.status().message()));
    }
    resp->set_applied(applied->applied_keys);
    metrics_->duplicate_keys->Increment(applied->duplicate_keys);
    metrics_->AddKeys(
        Method::kPush, batch.keys.size(),
        batch.keys.size() * Table(req.table_id()).pull_dim() * sizeof(float));
    return Status::OK;
  }

  Status DoCheckpoint(const ps::CheckpointRequest& req,
                      ps::CheckpointResponse* resp) {
    if (!options_.checkpoint_dir) {
      return Status(StatusCode::FAILED_PRECONDITION,
                    "Checkpoint: this pserver has no checkpoint directory");
    }
    if (req.epoch() == 0) return Invalid("Checkpoint: epoch must be >= 1");
    const std::string dir = options_.checkpoint_dir(req.epoch());
    const absl::Time start = absl::Now();
    absl::Status s = disk_.Check();  // a snapshot flushes memtables
    for (size_t i = 0; i < tables_.size() && s.ok(); ++i) {
      s = tables_[i]->Flush();
      if (s.ok()) {
        s = tables_[i]->Snapshot(i == 0 ? dir
                                        : absl::StrCat(dir, "/table-", i));
      }
    }
    if (!s.ok()) {
      SAMPAN_LOG(ERROR) << "checkpoint " << req.epoch() << " to " << dir << ": "
                        << s.message();
      // UNAVAILABLE only for what a retry may cure (an I/O error); a
      // snapshot that exists already or a table that cannot take one is
      // said as it is, so the caller stops retrying.
      const StatusCode code =
          absl::IsUnimplemented(s) || absl::IsFailedPrecondition(s)
              ? StatusCode::FAILED_PRECONDITION
          : absl::IsAlreadyExists(s) ? StatusCode::ALREADY_EXISTS
                                     : StatusCode::UNAVAILABLE;
      return Status(code, absl::StrCat("Checkpoint: ", s.message()));
    }
    // Digested here, on this pserver's disk, for the coordinator's manifest.
    // RocksDB's SSTs are immutable: those the last checkpoint linked too
    // keep their digests, and only new files are read.
    const uint64_t read_before = digests_.bytes_read();
    absl::StatusOr<std::vector<FileDigest>> files =
        DigestFiles(dir, {}, &digests_);
    if (!files.ok()) {
      SAMPAN_LOG(ERROR) << "checkpoint " << req.epoch() << ": digesting " << dir
                        << ": " << files.status().message();
      return Status(StatusCode::UNAVAILABLE,
                    absl::StrCat("Checkpoint: ", files.status().message()));
    }
    for (const FileDigest& f : *files) {
      ps::SnapshotFile* out = resp->add_files();
      out->set_path(f.path);
      out->set_size(f.size);
      out->set_crc32(f.crc32);
    }
    resp->set_seconds(absl::ToDoubleSeconds(absl::Now() - start));
    SAMPAN_LOG(INFO) << "checkpoint " << req.epoch() << ": snapshot in " << dir
                     << " (" << resp->seconds() << " s; "
                     << digests_.bytes_read() - read_before
                     << " bytes read to digest it)";
    return Status::OK;
  }

  // req.table_id() has been checked. A shrink writes every row of a RocksDB
  // table (rewritten or deleted), so it is refused as a push is when the disk
  // is nearly full. A failure is INTERNAL, not UNAVAILABLE: rows may be shrunk
  // already, and a client would retry UNAVAILABLE and age them twice.
  Status DoShrink(const ps::ShrinkRequest& req, ps::ShrinkResponse* resp) {
    if (Status s = CheckDisk("Shrink"); !s.ok()) return s;
    const uint32_t id = req.table_id();
    const absl::Time start = absl::Now();
    {
      std::lock_guard<std::mutex> lock(gauges_mu_);
      ++shrinks_running_;
    }
    const absl::StatusOr<ShrinkResult> shrunk = Table(id).Shrink();
    {
      std::lock_guard<std::mutex> lock(gauges_mu_);
      --shrinks_running_;
    }
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (!shrunk.ok()) {
      SAMPAN_LOG(ERROR) << "shrink of table " << id << " failed after "
                        << seconds << " s: " << shrunk.status().message();
      return Status(
          StatusCode::INTERNAL,
          absl::StrCat("Shrink: table ", id, ": ", shrunk.status().message(),
                       " (rows may be partly shrunk)"));
    }
    metrics_->table_shrinks->Increment();
    metrics_->table_rows_evicted->Increment(shrunk->deleted_rows);
    RefreshGauges();
    resp->set_deleted_rows(shrunk->deleted_rows);
    resp->set_rows(shrunk->rows);
    resp->set_seconds(seconds);
    SAMPAN_LOG(INFO) << "shrink of table " << id << ": deleted "
                     << shrunk->deleted_rows << " rows, " << shrunk->rows
                     << " left (" << seconds << " s)";
    return Status::OK;
  }

  Status DoStats(const ps::StatsRequest& req, ps::StatsResponse* resp) {
    if (Status s = CheckTableId("Stats", req.table_id()); !s.ok()) return s;
    const TableStats stats = Table(req.table_id()).Stats();
    resp->set_rows(stats.rows);
    resp->set_memory_bytes(stats.memory_bytes);
    resp->set_num_shards(options_.num_shards);
    for (uint32_t s : ownership_.Owned()) resp->add_owned_shards(s);
    return Status::OK;
  }

  // Only after CheckTableId (or CheckKeys) accepted the id.
  SparseTable& Table(uint32_t table_id) const { return *tables_[table_id]; }

  Status CheckTableId(const char* rpc, uint32_t table_id) const {
    return sampan::CheckTableId(rpc, table_id, tables_.size());
  }

  // FAILED_PRECONDITION naming `rpc` while the disk guard refuses writes.
  Status CheckDisk(const char* rpc) {
    if (absl::Status s = disk_.Check(); !s.ok()) {
      return Status(
          StatusCode::FAILED_PRECONDITION,
          absl::StrCat(rpc, ": pserver ", options_.index, ": ", s.message()));
    }
    return Status::OK;
  }

  Status CheckKeys(const char* rpc, uint32_t table_id,
                   const google::protobuf::RepeatedField<uint64_t>& keys) {
    if (Status s = CheckTableId(rpc, table_id); !s.ok()) return s;
    if (static_cast<size_t>(keys.size()) > kMaxKeysPerRequest) {
      return Invalid(absl::StrCat(rpc, ": ", keys.size(),
                                  " keys exceed the limit of ",
                                  kMaxKeysPerRequest, " per request"));
    }
    return Status::OK;
  }

  Status CheckPushShapes(const ps::PushRequest& req) const {
    const size_t n = req.keys_size();
    const uint32_t dim = Table(req.table_id()).pull_dim();
    const size_t want = n * dim * sizeof(float);
    if (req.grads().size() != want) {
      return Invalid(absl::StrCat("Push: grads has ", req.grads().size(),
                                  " bytes, expected ", want, " (", n,
                                  " keys x ", dim, " float32)"));
    }
    if (static_cast<size_t>(req.shows_size()) != n ||
        static_cast<size_t>(req.clicks_size()) != n) {
      return Invalid(absl::StrCat("Push: shows/clicks have ", req.shows_size(),
                                  "/", req.clicks_size(),
                                  " entries, expected one per key (", n, ")"));
    }
    return Status::OK;
  }

  const PserverOptions options_;
  std::atomic<uint64_t> coordinator_epoch_{0};  // newest a Checkpoint carried
  // Owned and frozen shards and the map version: runtime state (SetShards),
  // with its own lock.
  ShardOwnership ownership_;
  // Table i serves table_id i; fixed after construction.
  const std::vector<std::unique_ptr<SparseTable>> tables_;
  DiskGuard disk_;
  PserverMetrics* metrics_;
  // Digests of the SST files earlier checkpoints linked (thread-safe).
  DigestCache digests_{[](const std::string& path) {
    return absl::EndsWith(path, ".sst") || absl::EndsWith(path, ".blob");
  }};
  // Shrinks in progress; RefreshGauges leaves the table gauges alone while
  // any is, and holds the mutex while it reads them, so that no shrink
  // starts under it. (std::mutex rather than absl::Mutex: Debian's Abseil
  // is not built for ThreadSanitizer, which then cannot see it synchronize.)
  std::mutex gauges_mu_;
  int shrinks_running_ = 0;  // guarded by gauges_mu_
  ShardMover mover_;
  // Last: their threads start once every member they read is built (and
  // ThreadSanitizer, which cannot see gRPC's hand-offs, sees that).
  WorkerPool pull_pool_, push_pool_;
};

}  // namespace

std::unique_ptr<Pserver> Pserver::Create(const PserverOptions& options,
                                         std::unique_ptr<SparseTable> table) {
  std::vector<std::unique_ptr<SparseTable>> tables;
  tables.push_back(std::move(table));
  return Create(options, std::move(tables));
}

std::unique_ptr<Pserver> Pserver::Create(
    const PserverOptions& options,
    std::vector<std::unique_ptr<SparseTable>> tables) {
  return std::make_unique<PserverImpl>(options, std::move(tables));
}

}  // namespace sampan
