#include "pserver/shard_ownership.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/hash.h"

namespace sampan {
namespace {

using grpc::Status;
using grpc::StatusCode;

Status Invalid(const std::string& message) {
  return Status(StatusCode::INVALID_ARGUMENT, message);
}
Status Precondition(const std::string& message) {
  return Status(StatusCode::FAILED_PRECONDITION, message);
}

// Waits at most this long where a request has no deadline.
constexpr absl::Duration kLongestWait = absl::Seconds(60);

}  // namespace

ShardOwnership::ShardOwnership(uint32_t index, uint32_t num_shards,
                               const std::vector<uint32_t>& owned,
                               uint64_t version)
    : index_(index),
      num_shards_(num_shards),
      version_(version),
      applying_(num_shards, 0) {
  auto modes = std::make_shared<std::vector<Mode>>(
      num_shards, owned.empty() && version > 0 ? kOwned : kNotOwned);
  for (uint32_t s : owned) {
    if (s < num_shards) (*modes)[s] = kOwned;
  }
  modes_ = std::move(modes);
}

uint64_t ShardOwnership::version() const {
  std::lock_guard<std::mutex> lock(mu_);
  return version_;
}

std::shared_ptr<const std::vector<ShardOwnership::Mode>> ShardOwnership::modes()
    const {
  std::lock_guard<std::mutex> lock(mu_);
  return modes_;
}

std::vector<uint32_t> ShardOwnership::Owned() const {
  const auto modes = this->modes();
  std::vector<uint32_t> owned;
  for (uint32_t s = 0; s < modes->size(); ++s) {
    if ((*modes)[s] != kNotOwned) owned.push_back(s);
  }
  return owned;
}

Status ShardOwnership::Refusal(const char* rpc, uint64_t key, uint32_t shard,
                               Mode mode, uint64_t version) const {
  // ABORTED: the client's map is stale (or the shard is moving); it
  // refetches the map and resends.
  return Status(
      StatusCode::ABORTED,
      absl::StrCat(rpc, ": key ", key, " is in shard ", shard, ", which ",
                   mode == kFrozen ? "is moving off" : "is not owned by",
                   " pserver ", index_, " (shard map version ", version, ")"));
}

Status ShardOwnership::CheckRead(
    const char* rpc,
    const google::protobuf::RepeatedField<uint64_t>& keys) const {
  const auto modes = this->modes();
  for (uint64_t key : keys) {
    const uint32_t shard = ShardOf(key, num_shards_);
    if ((*modes)[shard] == kNotOwned) {
      return Refusal(rpc, key, shard, kNotOwned, version());
    }
  }
  return Status::OK;
}

ShardOwnership::PushGuard::~PushGuard() {
  if (owner_ == nullptr) return;
  std::lock_guard<std::mutex> lock(owner_->mu_);
  bool drained = false;
  for (uint32_t s : shards_) drained |= --owner_->applying_[s] == 0;
  if (drained) owner_->applied_cv_.notify_all();
}

Status ShardOwnership::BeginPush(
    const char* rpc, const google::protobuf::RepeatedField<uint64_t>& keys,
    PushGuard* guard, std::vector<uint32_t>* moving) {
  // Each shard once, with its first key (for the message); outside the lock.
  std::vector<uint64_t> first_key(num_shards_);
  std::vector<uint8_t> seen(num_shards_, 0);
  std::vector<uint32_t> shards;
  for (uint64_t key : keys) {
    const uint32_t s = ShardOf(key, num_shards_);
    if (seen[s]) continue;
    seen[s] = 1;
    first_key[s] = key;
    shards.push_back(s);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t s : shards) {
    const Mode mode = (*modes_)[s];
    if (mode == kFrozen && moving != nullptr) continue;
    if (mode != kOwned) return Refusal(rpc, first_key[s], s, mode, version_);
  }
  if (moving != nullptr) {
    for (uint32_t s : shards) {
      if ((*modes_)[s] == kFrozen) moving->push_back(s);
    }
    std::sort(moving->begin(), moving->end());
    shards.erase(
        std::remove_if(shards.begin(), shards.end(),
                       [&](uint32_t s) { return (*modes_)[s] == kFrozen; }),
        shards.end());
  }
  for (uint32_t s : shards) ++applying_[s];
  guard->owner_ = this;
  guard->shards_ = std::move(shards);
  return Status::OK;
}

Status ShardOwnership::CheckVersionLocked(const char* rpc,
                                          uint64_t version) const {
  if (version == 0) {
    return Invalid(absl::StrCat(rpc, ": shard_map_version must be >= 1"));
  }
  if (version < version_) {
    return Precondition(absl::StrCat(rpc, ": shard_map_version ", version,
                                     " is older than pserver ", index_, "'s ",
                                     version_, " (a stale coordinator?)"));
  }
  return Status::OK;
}

bool ShardOwnership::WaitApplied(std::unique_lock<std::mutex>& lock,
                                 const std::vector<uint32_t>& shards,
                                 absl::Time deadline) {
  deadline = std::min(deadline, absl::Now() + kLongestWait);
  const auto idle = [&] {
    for (uint32_t s : shards) {
      if (applying_[s] > 0) return false;
    }
    return true;
  };
  return applied_cv_.wait_until(lock, absl::ToChronoTime(deadline), idle);
}

Status ShardOwnership::Set(const ps::SetShardsRequest& req,
                           absl::Time deadline) {
  auto modes = std::make_shared<std::vector<Mode>>(num_shards_, kNotOwned);
  for (int i = 0; i < req.owned_shards_size(); ++i) {
    const uint32_t s = req.owned_shards(i);
    if (s >= num_shards_) {
      return Invalid(absl::StrCat("SetShards: owned_shards[", i, "] = ", s,
                                  " out of range (num_shards ", num_shards_,
                                  ")"));
    }
    if ((*modes)[s] != kNotOwned) {
      return Invalid(absl::StrCat("SetShards: owned_shards[", i, "] = ", s,
                                  " is listed twice"));
    }
    (*modes)[s] = kOwned;
  }
  for (int i = 0; i < req.frozen_shards_size(); ++i) {
    const uint32_t s = req.frozen_shards(i);
    if (s >= num_shards_ || (*modes)[s] == kNotOwned) {
      return Invalid(absl::StrCat("SetShards: frozen_shards[", i, "] = ", s,
                                  " is not in owned_shards"));
    }
    (*modes)[s] = kFrozen;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (Status st = CheckVersionLocked("SetShards", req.shard_map_version());
      !st.ok()) {
    return st;
  }
  for (const auto& [where, move] : moves_) {
    if (move == Move::kImport && (*modes)[where.second] != kNotOwned) {
      return Precondition(absl::StrCat("SetShards: shard ", where.second,
                                       " of table ", where.first,
                                       " is being imported; own it after"));
    }
  }
  std::vector<uint32_t> closed;  // writable before, not now
  for (uint32_t s = 0; s < num_shards_; ++s) {
    if ((*modes_)[s] == kOwned && (*modes)[s] != kOwned) closed.push_back(s);
  }
  modes_ = std::move(modes);
  version_ = req.shard_map_version();
  if (!WaitApplied(lock, closed, deadline)) {
    return Status(StatusCode::DEADLINE_EXCEEDED,
                  "SetShards: in force, but pushes to shards it closed are "
                  "still being applied; retry to wait for them");
  }
  return Status::OK;
}

Status ShardOwnership::BeginMove(const char* rpc, Move move, uint32_t table,
                                 uint32_t shard, uint64_t version,
                                 absl::Time deadline) {
  if (shard >= num_shards_) {
    return Invalid(absl::StrCat(rpc, ": shard ", shard,
                                " out of range (num_shards ", num_shards_,
                                ")"));
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (Status st = CheckVersionLocked(rpc, version); !st.ok()) return st;
  const Mode mode = (*modes_)[shard];
  if (move == Move::kExport && mode != kFrozen) {
    return Precondition(absl::StrCat(
        rpc, ": shard ", shard, " is ",
        mode == kOwned ? "owned but not frozen" : "not owned", " by pserver ",
        index_, "; freeze it with SetShards first"));
  }
  if (move != Move::kExport && mode != kNotOwned) {
    return Precondition(absl::StrCat(
        rpc, ": shard ", shard, " is owned by pserver ", index_,
        move == Move::kImport ? "; import only a shard it does not own yet"
                              : "; drop only a shard it no longer owns"));
  }
  const auto where = std::make_pair(table, shard);
  if (auto it = moves_.find(where); it != moves_.end()) {
    return Precondition(absl::StrCat(rpc, ": shard ", shard, " of table ",
                                     table,
                                     " is being exported, imported or "
                                     "dropped already"));
  }
  moves_[where] = move;
  if (move == Move::kExport && !WaitApplied(lock, {shard}, deadline)) {
    moves_.erase(where);
    return Status(StatusCode::DEADLINE_EXCEEDED,
                  absl::StrCat(rpc, ": pushes to shard ", shard,
                               " were still being applied at the deadline"));
  }
  return Status::OK;
}

void ShardOwnership::EndMove(uint32_t table, uint32_t shard) {
  std::lock_guard<std::mutex> lock(mu_);
  moves_.erase(std::make_pair(table, shard));
}

size_t ShardOwnership::moving() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [where, move] : moves_) n += move != Move::kDrop;
  return n;
}

}  // namespace sampan
