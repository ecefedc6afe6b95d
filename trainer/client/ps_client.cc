#include "trainer/client/ps_client.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/hash.h"
#include "proto/ps.grpc.pb.h"

namespace sampan {
namespace {

absl::Status FromGrpc(const grpc::Status& s, const std::string& where) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(where, ": ", s.error_message()));
}

// One in-flight push: owns its request, response and context until the
// completion queue hands it back.
struct PushCall {
  grpc::ClientContext context;
  ps::PushRequest request;
  ps::PushResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<ps::PushResponse>> reader;
  int pserver = 0;
};

class GrpcPsClient final : public PsClient {
 public:
  explicit GrpcPsClient(const PsClientOptions& options) : options_(options) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(256 << 20);
    args.SetMaxSendMessageSize(256 << 20);
    for (const std::string& address : options.pserver_addresses) {
      stubs_.push_back(ps::SparseTable::NewStub(grpc::CreateCustomChannel(
          address, grpc::InsecureChannelCredentials(), args)));
    }
    push_reaper_ = std::thread([this] { ReapPushes(); });
  }

  ~GrpcPsClient() override {
    (void)Flush();
    push_cq_.Shutdown();
    push_reaper_.join();
  }

  absl::Status Pull(absl::Span<const uint64_t> keys, bool is_training,
                    float* out) override {
    const size_t n = NumPservers();
    std::vector<std::vector<uint32_t>> positions = GroupByPserver(keys);
    struct Call {
      grpc::ClientContext context;
      ps::PullRequest request;
      ps::PullResponse response;
      grpc::Status status;
    };
    std::vector<Call> calls(n);
    grpc::CompletionQueue cq;
    int outstanding = 0;
    for (size_t p = 0; p < n; ++p) {
      if (positions[p].empty()) continue;
      Call& call = calls[p];
      call.context.set_deadline(
          absl::ToChronoTime(absl::Now() + options_.deadline));
      call.request.set_is_training(is_training);
      call.request.mutable_keys()->Reserve(positions[p].size());
      for (uint32_t i : positions[p]) call.request.add_keys(keys[i]);
      auto reader = stubs_[p]->AsyncPull(&call.context, call.request, &cq);
      reader->Finish(&call.response, &call.status, &call);
      ++outstanding;
    }
    absl::Status result;
    for (; outstanding > 0; --outstanding) {
      void* tag;
      bool ok;
      if (!cq.Next(&tag, &ok)) break;
      Call* call = static_cast<Call*>(tag);
      const size_t p = call - calls.data();
      absl::Status s = CheckPull(*call, positions[p].size(), p);
      if (!s.ok()) {
        if (result.ok()) result = s;
        continue;
      }
      Scatter(call->response.values(), positions[p], out);
    }
    return result;
  }

  absl::Status PushAsync(absl::Span<const uint64_t> keys,
                         absl::Span<const float> grads,
                         absl::Span<const float> shows,
                         absl::Span<const float> clicks) override {
    std::vector<std::vector<uint32_t>> positions = GroupByPserver(keys);
    const size_t row_bytes = options_.row_dim * sizeof(float);
    for (size_t p = 0; p < positions.size(); ++p) {
      if (positions[p].empty()) continue;
      auto call = std::make_unique<PushCall>();
      call->pserver = p;
      ps::PushRequest& req = call->request;
      req.set_trainer_id(options_.trainer_id);
      req.mutable_keys()->Reserve(positions[p].size());
      std::string* bytes = req.mutable_grads();
      bytes->resize(positions[p].size() * row_bytes);
      char* dst = bytes->data();
      for (uint32_t i : positions[p]) {
        req.add_keys(keys[i]);
        req.add_shows(shows[i]);
        req.add_clicks(clicks[i]);
        std::memcpy(dst, grads.data() + size_t{i} * options_.row_dim,
                    row_bytes);
        dst += row_bytes;
      }
      if (absl::Status s = StartPush(std::move(call)); !s.ok()) return s;
    }
    absl::MutexLock lock(&mu_);
    return first_error_;
  }

  absl::Status Flush() override {
    absl::MutexLock lock(&mu_);
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return inflight_ == 0;
    };
    // Each push has its own deadline, so this wait ends within one deadline.
    mu_.Await(absl::Condition(&drained));
    return first_error_;
  }

 private:
  size_t NumPservers() const { return stubs_.size(); }

  std::vector<std::vector<uint32_t>> GroupByPserver(
      absl::Span<const uint64_t> keys) const {
    std::vector<std::vector<uint32_t>> positions(NumPservers());
    for (uint32_t i = 0; i < keys.size(); ++i) {
      const uint32_t shard = ShardOf(keys[i], options_.num_shards);
      positions[PserverOfShard(shard, NumPservers())].push_back(i);
    }
    return positions;
  }

  template <typename Call>
  absl::Status CheckPull(const Call& call, size_t n, size_t p) const {
    const std::string where = absl::StrCat("Pull from pserver ", p, " (",
                                           options_.pserver_addresses[p], ")");
    if (!call.status.ok()) return FromGrpc(call.status, where);
    const size_t want = n * options_.row_dim * sizeof(float);
    if (call.response.values().size() != want) {
      return absl::InternalError(absl::StrCat(
          where, ": got ", call.response.values().size(), " bytes, expected ",
          want, " (row_dim ", options_.row_dim, ", server says ",
          call.response.row_dim(), ")"));
    }
    return absl::OkStatus();
  }

  void Scatter(const std::string& values, const std::vector<uint32_t>& pos,
               float* out) const {
    const size_t row_bytes = options_.row_dim * sizeof(float);
    const char* src = values.data();
    for (uint32_t i : pos) {
      std::memcpy(out + size_t{i} * options_.row_dim, src, row_bytes);
      src += row_bytes;
    }
  }

  absl::Status StartPush(std::unique_ptr<PushCall> call) {
    {
      absl::MutexLock lock(&mu_);
      auto has_room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return inflight_ < options_.max_inflight_pushes;
      };
      mu_.Await(absl::Condition(&has_room));
      ++inflight_;
    }
    PushCall* raw = call.release();
    raw->context.set_deadline(
        absl::ToChronoTime(absl::Now() + options_.deadline));
    raw->reader =
        stubs_[raw->pserver]->AsyncPush(&raw->context, raw->request, &push_cq_);
    raw->reader->Finish(&raw->response, &raw->status, raw);
    return absl::OkStatus();
  }

  // Owns completed PushCalls: records the first error, frees the call and
  // makes room for the next push.
  void ReapPushes() {
    void* tag;
    bool ok;
    while (push_cq_.Next(&tag, &ok)) {
      std::unique_ptr<PushCall> call(static_cast<PushCall*>(tag));
      absl::MutexLock lock(&mu_);
      if (!call->status.ok() && first_error_.ok()) {
        first_error_ = FromGrpc(
            call->status,
            absl::StrCat("Push to pserver ", call->pserver, " (",
                         options_.pserver_addresses[call->pserver], ")"));
      }
      --inflight_;
    }
  }

  const PsClientOptions options_;
  std::vector<std::unique_ptr<ps::SparseTable::Stub>> stubs_;
  grpc::CompletionQueue push_cq_;
  std::thread push_reaper_;
  absl::Mutex mu_;
  int inflight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<PsClient> PsClient::Create(const PsClientOptions& options) {
  return std::make_unique<GrpcPsClient>(options);
}

}  // namespace sampan
