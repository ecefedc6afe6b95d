// ShardOwnership: which shards a pserver owns, which of those are frozen
// (moving out), its shard map version, the pushes being applied per shard,
// and the shard moves in progress. The runtime state SetShards changes
// (proto/ps.proto); the pserver consults it on every pull and push.
//
// Thread-safe. One mutex (mu_) guards everything; the owned/frozen modes are
// also published as an immutable vector, so a pull checks its keys without
// holding the mutex. A push is checked and counted as applying on its shards
// under the mutex, so that once Set has returned, no push that passed the
// old state is still running on a shard the new one freezes or gives away.
#ifndef SAMPAN_PSERVER_SHARD_OWNERSHIP_H_
#define SAMPAN_PSERVER_SHARD_OWNERSHIP_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "google/protobuf/repeated_field.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps.pb.h"

namespace sampan {

class ShardOwnership {
 public:
  enum Mode : uint8_t { kNotOwned = 0, kOwned = 1, kFrozen = 2 };

  // `owned` empty: every shard, or none with version 0 (until Set).
  ShardOwnership(uint32_t index, uint32_t num_shards,
                 const std::vector<uint32_t>& owned, uint64_t version);

  uint32_t num_shards() const { return num_shards_; }
  uint64_t version() const;
  // Owned shards (frozen ones included), ascending.
  std::vector<uint32_t> Owned() const;

  // OK when every key's shard is owned (frozen ones too); otherwise ABORTED
  // naming `rpc`, the key, its shard and the map version.
  grpc::Status CheckRead(
      const char* rpc,
      const google::protobuf::RepeatedField<uint64_t>& keys) const;

  // A push counted as applying on its shards until destroyed.
  class PushGuard {
   public:
    PushGuard() = default;
    PushGuard(const PushGuard&) = delete;
    PushGuard& operator=(const PushGuard&) = delete;
    ~PushGuard();

   private:
    friend class ShardOwnership;
    ShardOwnership* owner_ = nullptr;
    std::vector<uint32_t> shards_;
  };
  // OK when every key's shard is owned and not frozen, the push then being
  // counted in *guard; ABORTED as CheckRead otherwise (frozen: "moving").
  // With `moving` set, frozen shards are not refused but listed there
  // (ascending) and not counted: the caller applies only the other keys.
  grpc::Status BeginPush(const char* rpc,
                         const google::protobuf::RepeatedField<uint64_t>& keys,
                         PushGuard* guard,
                         std::vector<uint32_t>* moving = nullptr);

  // SetShards: validates, installs, then waits until `deadline` for the
  // pushes applying on shards no longer writable to end.
  grpc::Status Set(const ps::SetShardsRequest& req, absl::Time deadline);

  // What a move needs of the shard (each refusal is FAILED_PRECONDITION).
  enum class Move { kExport, kImport, kDrop };
  // Checks the version and the shard's mode for `move` (export: frozen;
  // import, drop: not owned), marks (table, shard) moving, and for an export
  // waits until `deadline` for the pushes applying on it. EndMove undoes.
  grpc::Status BeginMove(const char* rpc, Move move, uint32_t table,
                         uint32_t shard, uint64_t version, absl::Time deadline);
  void EndMove(uint32_t table, uint32_t shard);
  // Exports and imports in progress.
  size_t moving() const;

 private:
  grpc::Status CheckVersionLocked(const char* rpc, uint64_t version) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until no push applies on any of `shards`.
  bool WaitApplied(std::unique_lock<std::mutex>& lock,
                   const std::vector<uint32_t>& shards, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  grpc::Status Refusal(const char* rpc, uint64_t key, uint32_t shard, Mode mode,
                       uint64_t version) const;
  std::shared_ptr<const std::vector<Mode>> modes() const;

  const uint32_t index_;
  const uint32_t num_shards_;
  mutable std::mutex mu_;
  std::condition_variable applied_cv_;  // a shard's applying_ reached 0
  // Replaced, never changed, so that readers may keep a copy.
  std::shared_ptr<const std::vector<Mode>> modes_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_);
  std::vector<uint32_t> applying_ ABSL_GUARDED_BY(mu_);  // pushes per shard
  // (table, shard) -> the export, import or drop running on it.
  std::map<std::pair<uint32_t, uint32_t>, Move> moves_ ABSL_GUARDED_BY(mu_);
};

}  // namespace sampan

#endif  // SAMPAN_PSERVER_SHARD_OWNERSHIP_H_
