#include "pserver/shard_copy.h"

#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

absl::Status Named(const char* rpc, const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(rpc, ": ", s.error_message()));
}

}  // namespace

absl::StatusOr<uint64_t> CopyShard(ps::SparseTable::StubInterface& source,
                                   ps::SparseTable::StubInterface& target,
                                   const ShardCopyRequest& request) {
  grpc::ClientContext export_ctx, import_ctx;
  for (grpc::ClientContext* ctx : {&export_ctx, &import_ctx}) {
    ctx->set_deadline(absl::ToChronoTime(request.deadline));
    if (!request.metadata_key.empty()) {
      ctx->AddMetadata(request.metadata_key, request.metadata_value);
    }
  }
  ps::ExportShardRequest export_req;
  export_req.set_table_id(request.table_id);
  export_req.set_shard(request.shard);
  export_req.set_shard_map_version(request.shard_map_version);
  std::unique_ptr<grpc::ClientReaderInterface<ps::ShardChunk>> reader =
      source.ExportShard(&export_ctx, export_req);
  ps::ImportShardResponse import_resp;
  std::unique_ptr<grpc::ClientWriterInterface<ps::ImportShardRequest>> writer =
      target.ImportShard(&import_ctx, &import_resp);
  ps::ImportShardRequest import_req;
  import_req.set_table_id(request.table_id);
  import_req.set_shard(request.shard);
  import_req.set_shard_map_version(request.shard_map_version);
  bool target_open = true;
  while (reader->Read(import_req.mutable_chunk())) {
    if (!writer->Write(import_req)) {
      target_open = false;  // its status says why
      export_ctx.TryCancel();
      break;
    }
  }
  if (target_open) writer->WritesDone();
  const grpc::Status exported = reader->Finish();
  const grpc::Status imported = writer->Finish();
  // A cut export makes the import fail too; the export's reason comes first.
  if (!exported.ok() && exported.error_code() != grpc::StatusCode::CANCELLED) {
    return Named("ExportShard", exported);
  }
  if (!imported.ok()) return Named("ImportShard", imported);
  if (!exported.ok()) return Named("ExportShard", exported);
  return import_resp.rows();
}

}  // namespace sampan
