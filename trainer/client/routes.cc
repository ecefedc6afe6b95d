#include "trainer/client/routes.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "trainer/client/client_metrics.h"

namespace sampan {
namespace {

void Connect(const PsClientOptions& options, const std::string& address,
             Routes::Table* table) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(256 << 20);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      address,
      options.credentials ? options.credentials
                          : grpc::InsecureChannelCredentials(),
      args);
  table->stubs.push_back(ps::SparseTable::NewStub(channel));
  table->pull_stubs.push_back(std::make_shared<PullStub>(channel));
}

}  // namespace

uint64_t RefusedByMapVersion(const grpc::ClientContext& context) {
  return Uint64InMetadata(context.GetServerTrailingMetadata(),
                          kShardMapVersionKey);
}

Routes::Routes(const PsClientOptions& options) : options_(options) {
  auto table = std::make_shared<Table>();
  table->map = options.shard_map;
  for (const std::string& address : table->map.addresses) {
    Connect(options, address, table.get());
  }
  current_ = std::move(table);
}

std::shared_ptr<const Routes::Table> Routes::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

uint64_t Routes::refreshes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refreshes_;
}

bool SameRouting(const ShardMap& a, const ShardMap& b) {
  return a.owner == b.owner && a.addresses.size() == b.addresses.size();
}

std::shared_ptr<const Routes::Table> Routes::Refresh(
    const Table& seen, const grpc::Status& status,
    const grpc::ClientContext* context) {
  const uint64_t refused_by =
      status.error_code() == grpc::StatusCode::ABORTED && context != nullptr
          ? RefusedByMapVersion(*context)
          : 0;
  if (!options_.fetch_shard_map) return Current();
  std::lock_guard<std::mutex> fetching(fetch_mu_);
  std::shared_ptr<const Table> now = Current();
  // Another thread fetched while this one waited: take what it got.
  if (now->map.version != seen.map.version) return now;
  // A pserver that says its map is newer than ours is worth asking about at
  // once, the first time it says so; an unreachable one (or a frozen shard
  // whose version was chased already), once per min_map_refresh.
  const bool newer_exists =
      refused_by > now->map.version && refused_by > chased_version_;
  if (!newer_exists && absl::Now() - last_fetch_ < options_.min_map_refresh) {
    return now;
  }
  if (newer_exists) chased_version_ = refused_by;
  return FetchLocked(now);
}

std::shared_ptr<const Routes::Table> Routes::Latest() {
  if (!options_.fetch_shard_map) return Current();
  std::lock_guard<std::mutex> fetching(fetch_mu_);
  return FetchLocked(Current());
}

std::shared_ptr<const Routes::Table> Routes::FetchLocked(
    std::shared_ptr<const Table> now) {
  last_fetch_ = absl::Now();
  absl::StatusOr<ShardMap> fetched = options_.fetch_shard_map();
  if (!fetched.ok()) {
    SAMPAN_LOG(WARNING) << "shard map: " << fetched.status().message();
    return now;
  }
  if (fetched->version <= now->map.version) return now;
  absl::Status bad = CheckFetched(*now, *fetched);
  absl::StatusOr<std::shared_ptr<const Table>> next =
      bad.ok() ? Adopt(*now, std::move(*fetched)) : bad;
  if (!next.ok()) {
    if (refused_version_ != fetched->version) {
      refused_version_ = fetched->version;
      SAMPAN_LOG(ERROR) << next.status().message() << "; keeping version "
                        << now->map.version;
    }
    return now;
  }
  if (!SameRouting(now->map, (*next)->map)) {
    SAMPAN_LOG(INFO) << "shard map version " << (*next)->map.version
                     << " moves shards (" << now->map.num_pservers() << " -> "
                     << (*next)->map.num_pservers() << " pservers)";
  }
  std::lock_guard<std::mutex> lock(mu_);
  current_ = *next;
  ++refreshes_;
  GetMapRefreshCounter()->Increment();
  return current_;
}

absl::Status Routes::CheckFetched(const Table& now, const ShardMap& map) const {
  if (absl::Status s = ValidateShardMap(map); !s.ok()) return s;
  if (map.num_shards() != now.map.num_shards()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shard map version ", map.version, " has ", map.num_shards(),
        " shards, this client's ", now.map.num_shards()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Routes::Table>> Routes::Adopt(
    const Table& old, ShardMap map) {
  auto table = std::make_shared<Table>();
  for (size_t p = 0; p < map.addresses.size(); ++p) {
    std::string& address = map.addresses[p];
    const bool known = p < old.map.addresses.size();
    if (address.empty() && known) address = old.map.addresses[p];
    if (address.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard map version ", map.version,
                       " has no address for pserver ", p));
    }
    if (known && address == old.map.addresses[p]) {
      table->stubs.push_back(old.stubs[p]);
      table->pull_stubs.push_back(old.pull_stubs[p]);
      continue;
    }
    SAMPAN_LOG(INFO) << "shard map version " << map.version << ": pserver " << p
                     << (known ? " moved from " + old.map.addresses[p] + " to "
                               : " new at ")
                     << address;
    Connect(options_, address, table.get());
  }
  table->map = std::move(map);
  return std::shared_ptr<const Table>(std::move(table));
}

}  // namespace sampan
