#include "coordinator/client.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "common/coordinator_epoch.h"
#include "common/retry.h"

namespace sampan {
namespace {

void SetDeadline(grpc::ClientContext* context, absl::Duration timeout) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

// Sends the newest epoch seen with `call`, and refuses its answer when an
// older coordinator gave it.
template <typename Call>
grpc::Status Fenced(std::atomic<uint64_t>* newest, grpc::ClientContext* context,
                    Call call) {
  const uint64_t before = newest->load();
  if (before > 0) {
    context->AddMetadata(kCoordinatorEpochKey, absl::StrCat(before));
  }
  grpc::Status s = call(context);
  const uint64_t theirs =
      CoordinatorEpochIn(context->GetServerInitialMetadata());
  if (theirs != 0 && theirs < newest->load()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("answer from coordinator epoch ", theirs,
                                     ", which coordinator epoch ",
                                     newest->load(), " replaced; not taken"));
  }
  RaiseEpoch(*newest, theirs);
  return s;
}

// Runs `attempt(context)` until it succeeds, fails with anything but
// UNAVAILABLE or an attempt's own deadline, or `budget` has passed: a
// coordinator that is restarting (`sampan run` brings a dead one back on
// its port) or stalled (stopped, swapping, paused by its node) is waited
// for. Each attempt waits for the channel to connect (wait_for_ready) and
// gets the budget's remainder, at most `per_attempt`, as its deadline; an
// attempt that hits that deadline with budget left is sent again, since a
// stalled coordinator keeps its connections open and never answers. The
// calls retried are those a second arrival makes no different:
// registration (a new incarnation), barrier arrivals (a set of indices),
// key-value puts and gets. When the budget runs out, the last answer that
// said why (UNAVAILABLE with a reason) is returned rather than the final
// attempt's deadline.
template <typename Attempt>
grpc::Status WithRetries(std::atomic<uint64_t>* newest, absl::Duration budget,
                         absl::Duration per_attempt, Attempt attempt) {
  const absl::Time give_up = absl::Now() + budget;
  Backoff backoff(absl::Milliseconds(50), absl::Seconds(1), budget);
  grpc::Status why;
  while (true) {
    grpc::ClientContext context;
    context.set_wait_for_ready(true);
    context.set_deadline(
        absl::ToChronoTime(std::min(give_up, absl::Now() + per_attempt)));
    grpc::Status s = Fenced(newest, &context, attempt);
    const bool timed_out =
        s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    if (timed_out && absl::Now() >= give_up) return why.ok() ? s : why;
    if (!timed_out && s.error_code() != grpc::StatusCode::UNAVAILABLE) {
      return s;
    }
    if (!timed_out) why = s;
    if (!backoff.Wait()) return why.ok() ? s : why;
  }
}

std::shared_ptr<grpc::Channel> NewChannel(
    const std::string& address,
    std::shared_ptr<grpc::ChannelCredentials> credentials,
    const std::string& tls_name) {
  grpc::ChannelArguments args;
  if (!tls_name.empty()) args.SetSslTargetNameOverride(tls_name);
  // A coordinator that died is back on its port within a fraction of a
  // second (`sampan run` restarts it at once): try again every 0.1-1 s, not
  // after gRPC's default backoff, which reaches two minutes. (The "min
  // reconnect backoff" is the time one attempt may take to connect: 2 s,
  // not 20, and not so short that a loaded machine's handshakes fail.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(
      address, credentials ? credentials : grpc::InsecureChannelCredentials(),
      args);
}

}  // namespace

CoordinatorClient::CoordinatorClient(
    const std::string& address, absl::Duration rpc_deadline,
    absl::Duration wait_timeout,
    std::shared_ptr<grpc::ChannelCredentials> credentials,
    const std::string& tls_name)
    : address_(address),
      rpc_deadline_(rpc_deadline),
      wait_timeout_(wait_timeout),
      stub_(coord::Coordinator::NewStub(
          NewChannel(address, std::move(credentials), tls_name))) {}

absl::Status CoordinatorClient::Register(coord::Role role, int index,
                                         const std::string& address,
                                         coord::RegisterResponse* response) {
  // The coordinator may still be starting, or restarting.
  coord::RegisterRequest req;
  req.set_role(role);
  req.set_index(index);
  req.set_address(address);
  coord::RegisterResponse resp;
  return GrpcToStatus(WithRetries(&newest_epoch_, wait_timeout_, wait_timeout_,
                                  [&](grpc::ClientContext* context) {
                                    return stub_->Register(
                                        context, req,
                                        response ? response : &resp);
                                  }),
                      absl::StrCat("Register with coordinator ", address_));
}

absl::Status CoordinatorClient::Heartbeat(
    const coord::HeartbeatRequest& request,
    coord::HeartbeatResponse* response) {
  grpc::ClientContext context;
  SetDeadline(&context, rpc_deadline_);
  coord::HeartbeatResponse resp;
  return GrpcToStatus(Fenced(&newest_epoch_, &context,
                             [&](grpc::ClientContext* c) {
                               return stub_->Heartbeat(
                                   c, request, response ? response : &resp);
                             }),
                      "Heartbeat");
}

absl::StatusOr<coord::CheckpointArriveResponse>
CoordinatorClient::CheckpointArrive(const coord::CheckpointArriveRequest& req,
                                    absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(&context, timeout);
  coord::CheckpointArriveResponse resp;
  grpc::Status s =
      Fenced(&newest_epoch_, &context, [&](grpc::ClientContext* c) {
        return stub_->CheckpointArrive(c, req, &resp);
      });
  if (!s.ok()) return GrpcToStatus(s, "CheckpointArrive");
  return resp;
}

absl::StatusOr<coord::ClusterSpec> CoordinatorClient::WaitClusterSpec() {
  coord::GetClusterSpecRequest req;
  req.set_wait_complete(true);
  coord::ClusterSpec spec;
  grpc::Status s =
      WithRetries(&newest_epoch_, wait_timeout_, wait_timeout_,
                  [&](grpc::ClientContext* context) {
                    return stub_->GetClusterSpec(context, req, &spec);
                  });
  if (!s.ok()) return GrpcToStatus(s, "GetClusterSpec");
  return spec;
}

absl::StatusOr<ShardMap> CoordinatorClient::GetShardMap() {
  grpc::ClientContext context;
  SetDeadline(&context, rpc_deadline_);
  coord::ClusterSpec spec;
  grpc::Status s =
      Fenced(&newest_epoch_, &context, [&](grpc::ClientContext* c) {
        return stub_->GetClusterSpec(c, coord::GetClusterSpecRequest(), &spec);
      });
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
                                        int index, absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) timeout = wait_timeout_;
  coord::BarrierRequest req;
  req.set_name(name);
  req.set_count(count);
  req.set_index(index);
  coord::BarrierResponse resp;
  return GrpcToStatus(WithRetries(&newest_epoch_, timeout, timeout,
                                  [&](grpc::ClientContext* context) {
                                    return stub_->Barrier(context, req, &resp);
                                  }),
                      absl::StrCat("Barrier '", name, "'"));
}

absl::Status CoordinatorClient::KvPut(const std::string& key,
                                      const std::string& value) {
  coord::KvPutRequest req;
  req.set_key(key);
  req.set_value(value);
  coord::KvPutResponse resp;
  return GrpcToStatus(WithRetries(&newest_epoch_, wait_timeout_, rpc_deadline_,
                                  [&](grpc::ClientContext* context) {
                                    return stub_->KvPut(context, req, &resp);
                                  }),
                      absl::StrCat("KvPut '", key, "'"));
}

absl::StatusOr<std::string> CoordinatorClient::KvGet(const std::string& key,
                                                     bool wait,
                                                     absl::Duration timeout) {
  // A waiting reader may start before the coordinator is up.
  coord::KvGetRequest req;
  req.set_key(key);
  req.set_wait(wait);
  coord::KvGetResponse resp;
  grpc::Status s = WithRetries(&newest_epoch_, wait ? timeout : wait_timeout_,
                               wait ? timeout : rpc_deadline_,
                               [&](grpc::ClientContext* context) {
                                 return stub_->KvGet(context, req, &resp);
                               });
  if (!s.ok()) return GrpcToStatus(s, absl::StrCat("KvGet '", key, "'"));
  if (!resp.found()) {
    return absl::NotFoundError(absl::StrCat("KvGet: key '", key, "' not set"));
  }
  return resp.value();
}

absl::StatusOr<coord::JobStatusResponse> CoordinatorClient::JobStatus() {
  grpc::ClientContext context;
  SetDeadline(&context, rpc_deadline_);
  // Waits (within the deadline) for a coordinator that is coming back,
  // rather than failing at once while the channel is still in its
  // reconnect backoff: `sampan run` measures outages with these calls.
  context.set_wait_for_ready(true);
  coord::JobStatusResponse resp;
  grpc::Status s =
      Fenced(&newest_epoch_, &context, [&](grpc::ClientContext* c) {
        return stub_->JobStatus(c, coord::JobStatusRequest(), &resp);
      });
  if (!s.ok()) return GrpcToStatus(s, "JobStatus");
  return resp;
}

absl::StatusOr<coord::ScaleResponse> CoordinatorClient::Scale(
    uint32_t num_pservers) {
  grpc::ClientContext context;
  SetDeadline(&context, rpc_deadline_);
  coord::ScaleRequest req;
  req.set_num_pservers(num_pservers);
  coord::ScaleResponse resp;
  grpc::Status s = Fenced(
      &newest_epoch_, &context,
      [&](grpc::ClientContext* c) { return stub_->Scale(c, req, &resp); });
  if (!s.ok()) return GrpcToStatus(s, "Scale");
  return resp;
}

}  // namespace sampan
