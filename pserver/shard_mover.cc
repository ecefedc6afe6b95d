#include "pserver/shard_mover.h"

#include <cstring>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/thread_priority.h"

namespace sampan {
namespace {

using grpc::Status;
using grpc::StatusCode;

// About this many bytes of rows per ExportShard message.
constexpr size_t kChunkBytes = 1 << 20;

Status Invalid(const std::string& message) {
  return Status(StatusCode::INVALID_ARGUMENT, message);
}

// A table's error at the wire: a bad chunk is the caller's, a refusal as it
// is, anything else (storage) UNAVAILABLE, which a coordinator may retry.
Status FromTable(const char* rpc, const absl::Status& s) {
  const StatusCode code =
      absl::IsInvalidArgument(s)      ? StatusCode::INVALID_ARGUMENT
      : absl::IsFailedPrecondition(s) ? StatusCode::FAILED_PRECONDITION
      : absl::IsCancelled(s)          ? StatusCode::CANCELLED
                                      : StatusCode::UNAVAILABLE;
  return Status(code, absl::StrCat(rpc, ": ", s.message()));
}

// The request's deadline, less a margin so that the caller gets our answer
// rather than gRPC's bare DEADLINE_EXCEEDED.
absl::Time Deadline(const grpc::ServerContext& ctx) {
  return absl::FromChrono(ctx.deadline()) - absl::Milliseconds(50);
}

void ToProto(const ShardChunk& c, ps::ShardChunk* msg) {
  msg->Clear();
  msg->mutable_keys()->Add(c.keys.begin(), c.keys.end());
  msg->mutable_widths()->Add(c.widths.begin(), c.widths.end());
  msg->set_floats(reinterpret_cast<const char*>(c.floats.data()),
                  c.floats.size() * sizeof(float));
  for (const auto& [writer, sequence] : c.sequences) {
    msg->add_writers(writer);
    msg->add_sequences(sequence);
  }
}

Status FromProto(const ps::ShardChunk& msg, ShardChunk* c) {
  if (msg.floats().size() % sizeof(float) != 0) {
    return Invalid(absl::StrCat("ImportShard: chunk.floats has ",
                                msg.floats().size(),
                                " bytes, not a whole number of float32"));
  }
  if (msg.writers_size() != msg.sequences_size()) {
    return Invalid(absl::StrCat("ImportShard: chunk.writers has ",
                                msg.writers_size(), " entries, ",
                                "chunk.sequences ", msg.sequences_size()));
  }
  c->Clear();
  c->keys.assign(msg.keys().begin(), msg.keys().end());
  c->widths.assign(msg.widths().begin(), msg.widths().end());
  c->floats.resize(msg.floats().size() / sizeof(float));
  std::memcpy(c->floats.data(), msg.floats().data(), msg.floats().size());
  for (int i = 0; i < msg.writers_size(); ++i) {
    c->sequences.emplace_back(msg.writers(i), msg.sequences(i));
  }
  return Status::OK;
}

// Runs `work` on a thread of its own at background priority, and waits.
// A move's table scans and writes can wait; the pulls and pushes that keep
// the trainers going cannot (on a busy machine a move's scans took the CPU
// of the training it serves). The stream objects `work` uses are the
// handler's, which blocks meanwhile, so no two threads use them at once.
grpc::Status AtBackgroundPriority(const std::function<grpc::Status()>& work) {
  grpc::Status result;
  std::thread([&] {
    SetCurrentThreadNice(kMoveNice);
    result = work();
  }).join();
  return result;
}

}  // namespace

Status CheckTableId(const char* rpc, uint32_t table_id, size_t num_tables) {
  if (table_id >= num_tables) {
    return Invalid(absl::StrCat(
        rpc, ": unknown table_id ", table_id, " (this job has ",
        num_tables == 1 ? "table 0 only"
                        : absl::StrCat("tables 0-", num_tables - 1),
        ")"));
  }
  return Status::OK;
}

class ShardMover::Slot {
 public:
  Slot(ShardMover* mover, uint32_t table, uint32_t shard)
      : m_(mover), table_(table), shard_(shard) {}
  Status Begin(const char* rpc, ShardOwnership::Move move, uint64_t version,
               absl::Time deadline) {
    Status st =
        m_->ownership_.BeginMove(rpc, move, table_, shard_, version, deadline);
    held_ = st.ok();
    m_->metrics_->shards_moving->Set(m_->ownership_.moving());
    return st;
  }
  ~Slot() {
    if (!held_) return;
    m_->ownership_.EndMove(table_, shard_);
    m_->metrics_->shards_moving->Set(m_->ownership_.moving());
  }

 private:
  ShardMover* const m_;
  const uint32_t table_, shard_;
  bool held_ = false;
};

Status ShardMover::SetShards(grpc::ServerContext& ctx,
                             const ps::SetShardsRequest& req,
                             ps::SetShardsResponse* resp) {
  Status st = ownership_.Set(req, Deadline(ctx));
  const uint64_t version = ownership_.version();
  metrics_->shard_map_version->Set(version);
  resp->set_shard_map_version(version);
  if (st.ok()) {
    SAMPAN_LOG(INFO) << "shard map version " << version << ": "
                     << req.owned_shards_size() << " shards owned, "
                     << req.frozen_shards_size() << " of them frozen";
  }
  return st;
}

Status ShardMover::Export(grpc::ServerContext& ctx,
                          const ps::ExportShardRequest& req,
                          grpc::ServerWriterInterface<ps::ShardChunk>* writer) {
  return AtBackgroundPriority(
      [&] { return ExportAtLowPriority(ctx, req, writer); });
}

Status ShardMover::ExportAtLowPriority(
    grpc::ServerContext& ctx, const ps::ExportShardRequest& req,
    grpc::ServerWriterInterface<ps::ShardChunk>* writer) {
  const absl::Time start = absl::Now();
  if (Status s = CheckTableId("ExportShard", req.table_id(), tables_.size());
      !s.ok()) {
    return s;
  }
  Slot slot(this, req.table_id(), req.shard());
  if (Status s = slot.Begin("ExportShard", ShardOwnership::Move::kExport,
                            req.shard_map_version(), Deadline(ctx));
      !s.ok()) {
    return s;
  }
  SparseTable& table = *tables_[req.table_id()];
  // A full row is at most about 3 floats per pulled one (w, v and optimizer
  // state) plus the statistics.
  const size_t row_bytes = (3 * size_t{table.pull_dim()} + 8) * 4 + 12;
  const size_t max_rows = std::max<size_t>(1, kChunkBytes / row_bytes);
  // Sent one behind, so that the last can say it is.
  ps::ShardChunk pending;
  bool have_pending = false;
  uint64_t rows = 0;
  const auto send = [&]() -> absl::Status {
    if (ctx.IsCancelled() || !writer->Write(pending)) {
      return absl::CancelledError(
          "the stream broke (cancelled, past its deadline, or the client "
          "went away)");
    }
    return absl::OkStatus();
  };
  absl::Status st =
      table.ExportShard(req.shard(), max_rows, [&](const ShardChunk& c) {
        if (have_pending) {
          if (absl::Status sent = send(); !sent.ok()) return sent;
        }
        ToProto(c, &pending);
        have_pending = true;
        rows += c.rows();
        return absl::OkStatus();
      });
  if (st.ok()) {
    pending.set_last(true);
    pending.set_total_rows(rows);
    st = send();
  }
  if (!st.ok()) {
    SAMPAN_LOG(WARNING) << "export of shard " << req.shard() << " of table "
                        << req.table_id() << ": " << st.message();
    return FromTable("ExportShard", st);
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  metrics_->shard_move_rows[0]->Increment(rows);
  metrics_->shard_move_duration[0]->Observe(seconds);
  SAMPAN_LOG(INFO) << "exported shard " << req.shard() << " of table "
                   << req.table_id() << ": " << rows << " rows in " << seconds
                   << " s";
  return Status::OK;
}

Status ShardMover::Import(
    grpc::ServerContext& ctx,
    grpc::ServerReaderInterface<ps::ImportShardRequest>* reader,
    ps::ImportShardResponse* resp) {
  const absl::Time start = absl::Now();
  ps::ImportShardRequest req;
  if (!reader->Read(&req)) {
    return Invalid("ImportShard: the stream ended before its first message");
  }
  if (Status s = CheckTableId("ImportShard", req.table_id(), tables_.size());
      !s.ok()) {
    return s;
  }
  Slot slot(this, req.table_id(), req.shard());
  if (Status s = slot.Begin("ImportShard", ShardOwnership::Move::kImport,
                            req.shard_map_version(), Deadline(ctx));
      !s.ok()) {
    return s;
  }
  const uint32_t table = req.table_id(), shard = req.shard();
  uint64_t rows = 0;
  Status st =
      AtBackgroundPriority([&] { return ImportInto(ctx, req, reader, &rows); });
  if (!st.ok()) {
    SAMPAN_LOG(WARNING) << "import of shard " << shard << " of table " << table
                        << " (left empty): " << st.error_message();
    return st;
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  metrics_->shard_move_rows[1]->Increment(rows);
  metrics_->shard_move_duration[1]->Observe(seconds);
  resp->set_rows(rows);
  resp->set_seconds(seconds);
  SAMPAN_LOG(INFO) << "imported shard " << shard << " of table " << table
                   << ": " << rows << " rows in " << seconds << " s";
  return Status::OK;
}

// An import not committed here empties the shard as it goes.
Status ShardMover::ImportInto(
    grpc::ServerContext& ctx, ps::ImportShardRequest& req,
    grpc::ServerReaderInterface<ps::ImportShardRequest>* reader,
    uint64_t* rows) {
  const uint32_t table = req.table_id(), shard = req.shard();
  const uint64_t version = req.shard_map_version();
  absl::StatusOr<std::unique_ptr<ShardImport>> import =
      tables_[table]->ImportShard(shard);
  if (!import.ok()) return FromTable("ImportShard", import.status());
  ShardChunk chunk;
  bool last = false;
  uint64_t total = 0;
  int n = 0;
  do {
    if (req.table_id() != table || req.shard() != shard ||
        req.shard_map_version() != version) {
      return Invalid(absl::StrCat(
          "ImportShard: message ", n, " names table_id ", req.table_id(),
          ", shard ", req.shard(), ", shard_map_version ",
          req.shard_map_version(), "; the first named ", table, ", ", shard,
          ", ", version));
    }
    if (last) {
      return Invalid(absl::StrCat("ImportShard: message ", n,
                                  " follows the chunk marked last"));
    }
    if (Status s = FromProto(req.chunk(), &chunk); !s.ok()) return s;
    if (absl::Status s = (*import)->Add(chunk); !s.ok()) {
      return FromTable("ImportShard", s);
    }
    last = req.chunk().last();
    total = req.chunk().total_rows();
    ++n;
  } while (reader->Read(&req));
  if (ctx.IsCancelled()) {
    return Status(StatusCode::CANCELLED,
                  "ImportShard: cancelled (or past its deadline); nothing "
                  "imported");
  }
  if (!last) {
    return Invalid(absl::StrCat(
        "ImportShard: the stream ended without the export's last chunk (",
        (*import)->rows(), " rows received); nothing imported"));
  }
  if ((*import)->rows() != total) {
    return Invalid(absl::StrCat("ImportShard: ", (*import)->rows(),
                                " rows received, the last chunk's total_rows "
                                "says ",
                                total, "; nothing imported"));
  }
  if (absl::Status s = (*import)->Commit(); !s.ok()) {
    return FromTable("ImportShard", s);
  }
  *rows = (*import)->rows();
  return Status::OK;
}

Status ShardMover::Drop(grpc::ServerContext& ctx,
                        const ps::DropShardRequest& req,
                        ps::DropShardResponse* resp) {
  if (Status s = CheckTableId("DropShard", req.table_id(), tables_.size());
      !s.ok()) {
    return s;
  }
  Slot slot(this, req.table_id(), req.shard());
  if (Status s = slot.Begin("DropShard", ShardOwnership::Move::kDrop,
                            req.shard_map_version(), Deadline(ctx));
      !s.ok()) {
    return s;
  }
  absl::StatusOr<uint64_t> dropped;
  AtBackgroundPriority([&] {
    dropped = tables_[req.table_id()]->DropShard(req.shard());
    return Status::OK;
  }).IgnoreError();
  if (!dropped.ok()) return FromTable("DropShard", dropped.status());
  resp->set_rows(*dropped);
  SAMPAN_LOG(INFO) << "dropped shard " << req.shard() << " of table "
                   << req.table_id() << ": " << *dropped << " rows";
  return Status::OK;
}

}  // namespace sampan
