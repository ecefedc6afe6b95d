#include "coordinator/client.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"

namespace sampan {
namespace {

void SetDeadline(grpc::ClientContext* context, absl::Duration timeout) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

}  // namespace

CoordinatorClient::CoordinatorClient(
    const std::string& address, absl::Duration rpc_deadline,
    absl::Duration wait_timeout,
    std::shared_ptr<grpc::ChannelCredentials> credentials)
    : address_(address),
      rpc_deadline_(rpc_deadline),
      wait_timeout_(wait_timeout),
      stub_(coord::Coordinator::NewStub(grpc::CreateChannel(
          address,
          credentials ? credentials : grpc::InsecureChannelCredentials()))) {}

absl::Status CoordinatorClient::Register(coord::Role role, int index,
                                         const std::string& address,
                                         coord::RegisterResponse* response) {
  grpc::ClientContext context;
  // The coordinator may still be starting: wait for the channel to connect
  // rather than failing the first attempt.
  context.set_wait_for_ready(true);
  SetDeadline(&context, wait_timeout_);
  coord::RegisterRequest req;
  req.set_role(role);
  req.set_index(index);
  req.set_address(address);
  coord::RegisterResponse resp;
  return GrpcToStatus(
      stub_->Register(&context, req, response ? response : &resp),
      absl::StrCat("Register with coordinator ", address_));
}

absl::Status CoordinatorClient::Heartbeat(
    const coord::HeartbeatRequest& request,
    coord::HeartbeatResponse* response) {
  grpc::ClientContext context;
  SetDeadline(&context, rpc_deadline_);
  coord::HeartbeatResponse resp;
  return GrpcToStatus(
      stub_->Heartbeat(&context, request, response ? response : &resp),
      "Heartbeat");
}

absl::StatusOr<coord::CheckpointArriveResponse>
CoordinatorClient::CheckpointArrive(const coord::CheckpointArriveRequest& req,
                                    absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  coord::CheckpointArriveResponse resp;
  grpc::Status s = stub_->CheckpointArrive(&context, req, &resp);
  if (!s.ok()) return GrpcToStatus(s, "CheckpointArrive");
  return resp;
}

absl::StatusOr<coord::ClusterSpec> CoordinatorClient::WaitClusterSpec() {
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  SetDeadline(&context, wait_timeout_);
  coord::GetClusterSpecRequest req;
  req.set_wait_complete(true);
  coord::ClusterSpec spec;
  grpc::Status s = stub_->GetClusterSpec(&context, req, &spec);
  if (!s.ok()) return GrpcToStatus(s, "GetClusterSpec");
  return spec;
}

absl::StatusOr<ShardMap> CoordinatorClient::GetShardMap() {
  grpc::ClientContext context;
  SetDeadline(&context, rpc_deadline_);
  coord::ClusterSpec spec;
  grpc::Status s =
      stub_->GetClusterSpec(&context, coord::GetClusterSpecRequest(), &spec);
  if (!s.ok()) {
    return GrpcToStatus(s, absl::StrCat("GetClusterSpec from coordinator ",
                                        address_, " (for the shard map)"));
  }
  return ToShardMap(spec.shard_map());
}

ShardMap CoordinatorClient::ToShardMap(const coord::ShardMap& map) {
  ShardMap out;
  out.version = map.version();
  out.owner.assign(map.owner().begin(), map.owner().end());
  out.addresses.assign(map.address().begin(), map.address().end());
  return out;
}

absl::Status CoordinatorClient::Barrier(const std::string& name, int count,
                                        int index) {
  grpc::ClientContext context;
  SetDeadline(&context, wait_timeout_);
  coord::BarrierRequest req;
  req.set_name(name);
  req.set_count(count);
  req.set_index(index);
  coord::BarrierResponse resp;
  return GrpcToStatus(stub_->Barrier(&context, req, &resp),
                      absl::StrCat("Barrier '", name, "'"));
}

absl::Status CoordinatorClient::KvPut(const std::string& key,
                                      const std::string& value) {
  grpc::ClientContext context;
  SetDeadline(&context, rpc_deadline_);
  coord::KvPutRequest req;
  req.set_key(key);
  req.set_value(value);
  coord::KvPutResponse resp;
  return GrpcToStatus(stub_->KvPut(&context, req, &resp), "KvPut");
}

absl::StatusOr<std::string> CoordinatorClient::KvGet(const std::string& key,
                                                     bool wait,
                                                     absl::Duration timeout) {
  grpc::ClientContext context;
  // A waiting reader may start before the coordinator is up.
  context.set_wait_for_ready(wait);
  SetDeadline(&context, wait ? timeout : rpc_deadline_);
  coord::KvGetRequest req;
  req.set_key(key);
  req.set_wait(wait);
  coord::KvGetResponse resp;
  grpc::Status s = stub_->KvGet(&context, req, &resp);
  if (!s.ok()) return GrpcToStatus(s, absl::StrCat("KvGet '", key, "'"));
  if (!resp.found()) {
    return absl::NotFoundError(absl::StrCat("KvGet: key '", key, "' not set"));
  }
  return resp.value();
}

absl::StatusOr<coord::JobStatusResponse> CoordinatorClient::JobStatus() {
  grpc::ClientContext context;
  SetDeadline(&context, rpc_deadline_);
  coord::JobStatusResponse resp;
  grpc::Status s = stub_->JobStatus(&context, coord::JobStatusRequest(), &resp);
  if (!s.ok()) return GrpcToStatus(s, "JobStatus");
  return resp;
}

}  // namespace sampan
