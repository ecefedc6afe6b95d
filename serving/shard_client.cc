#include "serving/shard_client.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_status.h"
#include "common/hash.h"

namespace sampan {
namespace {

// One RPC to one shard.
template <typename Response>
struct Call {
  size_t shard = 0;
  grpc::ClientContext context;
  Response response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<Response>> reader;
};

// Starts start(call, cq) for every call at once, each with `deadline`, and
// waits until all have finished (each does by its deadline).
template <typename Response, typename Start>
void RunAll(std::vector<std::unique_ptr<Call<Response>>>* calls,
            absl::Duration deadline, const Start& start) {
  grpc::CompletionQueue cq;
  const auto until = absl::ToChronoTime(absl::Now() + deadline);
  for (auto& call : *calls) {
    call->context.set_deadline(until);
    call->reader = start(call.get(), &cq);
    call->reader->StartCall();
    call->reader->Finish(&call->response, &call->status, call.get());
  }
  void* tag = nullptr;
  bool ok = false;
  for (size_t done = 0; done < calls->size() && cq.Next(&tag, &ok); ++done) {
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

// A shard's failure as the front end reports it: unreachable or too slow
// is Unavailable.
absl::Status ShardError(const grpc::Status& status, const std::string& name) {
  const grpc::StatusCode code = status.error_code();
  if (code == grpc::StatusCode::DEADLINE_EXCEEDED ||
      code == grpc::StatusCode::UNAVAILABLE ||
      code == grpc::StatusCode::CANCELLED) {
    return absl::UnavailableError(
        absl::StrCat(name, ": ", status.error_message()));
  }
  return GrpcToStatus(status, name);
}

class ShardRows final : public RowSource {
 public:
  ShardRows(std::shared_ptr<const ShardClients> clients, uint64_t version,
            int row_dim)
      : clients_(std::move(clients)), version_(version), row_dim_(row_dim) {}
  int row_dim() const override { return row_dim_; }
  absl::Status Lookup(absl::Span<const uint64_t> keys, float* rows,
                      uint8_t* found) const override {
    return clients_->Lookup(version_, row_dim_, keys, rows, found);
  }

 private:
  const std::shared_ptr<const ShardClients> clients_;
  const uint64_t version_;
  const int row_dim_;
};

}  // namespace

ShardClients::ShardClients(const ShardClientOptions& options)
    : options_(options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  // A shard back after a restart or SIGCONT is used again within a second.
  // (The "min reconnect backoff" is how long one connection attempt may
  // take: 2 s, so that a loaded machine's handshakes are not cut short.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  for (const std::string& address : options.addresses) {
    stubs_.push_back(serving::Lookup::NewStub(grpc::CreateCustomChannel(
        address,
        options.credentials ? options.credentials
                            : grpc::InsecureChannelCredentials(),
        args)));
  }
}

std::string ShardClients::Name(size_t shard) const {
  return absl::StrCat("lookup shard ", shard, " (", options_.addresses[shard],
                      ")");
}

absl::StatusOr<uint64_t> ShardClients::CommonVersion() {
  using Versions = serving::ShardVersionsResponse;
  std::vector<std::unique_ptr<Call<Versions>>> calls;
  for (size_t i = 0; i < stubs_.size(); ++i) {
    calls.push_back(std::make_unique<Call<Versions>>());
    calls.back()->shard = i;
  }
  const serving::ShardVersionsRequest request;
  RunAll(&calls, options_.deadline,
         [&](Call<Versions>* call, grpc::CompletionQueue* cq) {
           return stubs_[call->shard]->PrepareAsyncVersions(&call->context,
                                                            request, cq);
         });
  std::vector<uint64_t> common;
  std::vector<std::string> held;
  for (auto& call : calls) {
    if (!call->status.ok()) return ShardError(call->status, Name(call->shard));
    const Versions& r = call->response;
    if (r.shard() != call->shard || r.shards() != stubs_.size()) {
      return absl::FailedPreconditionError(
          absl::StrCat(Name(call->shard), " is lookup shard ", r.shard(),
                       " of ", r.shards(), "; this front end wants shard ",
                       call->shard, " of ", stubs_.size(), " there"));
    }
    std::vector<uint64_t> versions(r.versions().begin(), r.versions().end());
    held.push_back(absl::StrCat("shard ", call->shard, ": [",
                                absl::StrJoin(versions, ", "), "]"));
    if (call->shard == 0) {
      common = versions;
      row_dim_ = int(r.row_dim());
    } else {
      std::vector<uint64_t> both;
      std::set_intersection(common.begin(), common.end(), versions.begin(),
                            versions.end(), std::back_inserter(both));
      common.swap(both);
    }
  }
  if (common.empty()) {
    return absl::UnavailableError(
        absl::StrCat("no version is held by every lookup shard yet (",
                     absl::StrJoin(held, "; "), ")"));
  }
  return common.back();
}

std::shared_ptr<const RowSource> ShardClients::RowsOf(uint64_t version) {
  return std::make_shared<ShardRows>(shared_from_this(), version,
                                     row_dim_.load());
}

absl::Status ShardClients::Lookup(uint64_t version, int row_dim,
                                  absl::Span<const uint64_t> keys, float* rows,
                                  uint8_t* found) const {
  using Response = serving::LookupResponse;
  const size_t n = stubs_.size();
  std::vector<std::vector<uint32_t>> positions(n);
  std::vector<serving::LookupRequest> requests(n);
  for (size_t k = 0; k < keys.size(); ++k) {
    const uint32_t shard =
        PserverOfShard(ShardOf(keys[k], options_.table_shards), uint32_t(n));
    positions[shard].push_back(uint32_t(k));
    requests[shard].add_keys(keys[k]);
  }
  std::vector<std::unique_ptr<Call<Response>>> calls;
  for (size_t i = 0; i < n; ++i) {
    if (positions[i].empty()) continue;
    requests[i].set_version(version);
    calls.push_back(std::make_unique<Call<Response>>());
    calls.back()->shard = i;
  }
  RunAll(&calls, options_.deadline,
         [&](Call<Response>* call, grpc::CompletionQueue* cq) {
           return stubs_[call->shard]->PrepareAsyncLookup(
               &call->context, requests[call->shard], cq);
         });
  const size_t bytes = size_t(row_dim) * sizeof(float);
  for (auto& call : calls) {
    if (!call->status.ok()) return ShardError(call->status, Name(call->shard));
    const Response& r = call->response;
    const std::vector<uint32_t>& at = positions[call->shard];
    if (r.row_dim() != uint32_t(row_dim) || r.found().size() != at.size() ||
        r.rows().size() != at.size() * bytes) {
      return absl::DataLossError(
          absl::StrCat(Name(call->shard), ": Lookup answered ",
                       r.found().size(), " of ", at.size(), " keys, rows of ",
                       r.row_dim(), " floats, want ", row_dim));
    }
    for (size_t j = 0; j < at.size(); ++j) {
      std::memcpy(rows + size_t(at[j]) * row_dim, r.rows().data() + j * bytes,
                  bytes);
      found[at[j]] = uint8_t(r.found()[j]);
    }
  }
  return absl::OkStatus();
}

}  // namespace sampan
