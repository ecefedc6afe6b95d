// VersionStore: the sparse rows of model versions in a local RocksDB
// database, for models larger than memory (serving.store_dir). Dense weights
// stay in memory (ScoringModel); only the rows live here.
//
// Layout: one database in `dir`, wiped at Open: the store is a copy of the
// versions root, rebuilt on every start from the newest base and its deltas
// (a restart reloads the base; nothing of a previous run is trusted). A base
// is loaded aside into a column family of its own, one SST file per part
// (SstFileWriter + IngestExternalFile, no Put per row); each delta after it
// is applied to that column family as one WriteBatch. Keys and values are
// sparse_table's (RowKey(key) -> the row's floats and a 4-byte trailer, here
// the version that wrote it), and so are the column family options and the
// memory budget rules (RowColumnFamilyOptions).
//
// Promises:
//   - A version is served from a View: its column family and a RocksDB
//     snapshot taken right after the version was applied, so a View reads
//     exactly one version however many deltas or bases follow. A View keeps
//     its column family alive; the family of a replaced base is dropped when
//     the last View of it is released.
//   - Bring verifies every file it will read against its VERSION before it
//     writes anything; a corrupt or half-written version changes nothing.
//     A delta is applied whole or not at all (one WriteBatch).
//   - Rows of all zeros are no rows (trainer/model_version.h): dropped from
//     a base, deletions in a delta. Parts sharing a key: part 0's row stands,
//     as ReadSparseRows reads them.
//   - Memory: memory_budget_bytes as a table's hot_tier_bytes is honoured:
//     half for one block cache all column families share, up to a quarter
//     for memtables, the rest headroom for what RocksDB keeps outside its
//     caches (index and filter blocks). While a version loads, one part file
//     (a base part, or every part of one delta) is held in memory besides.
//
// Thread safety: Bring and Invalidate are called from one thread at a time
// (a follower's refresh); Views and stats() from any thread.
#ifndef SAMPAN_SERVING_ROW_STORE_H_
#define SAMPAN_SERVING_ROW_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/model_version.h"
#include "trainer/scoring.h"

namespace sampan {

struct VersionStoreOptions {
  // The database's directory; wiped at Open.
  std::string dir;
  // RocksDB's block cache and memtables (see the promises above).
  uint64_t memory_budget_bytes = 256ull << 20;
  // Keeps only the keys for which keep(key) is true (a lookup shard's keys,
  // serving/lookup_service.h); null keeps all.
  std::function<bool(uint64_t)> keep;
};

class VersionStore {
 public:
  // Wipes options.dir and opens a fresh database there. Unavailable when
  // the directory cannot be made or RocksDB cannot open it.
  static absl::StatusOr<std::unique_ptr<VersionStore>> Open(
      const VersionStoreOptions& options);
  ~VersionStore();
  VersionStore(const VersionStore&) = delete;
  VersionStore& operator=(const VersionStore&) = delete;

  // Brings the store to the newest member of `chain` (base first, as
  // ReadChainMembers or ResolveChain return it) and returns a View of that
  // version's rows. Applies only the deltas past the version brought last
  // when `chain` extends it; otherwise loads the chain's base aside into a
  // new column family. Errors: the verification's DataLoss naming the file;
  // FailedPrecondition for rows of another width; Unavailable for I/O. After
  // an error, every View handed out reads as before.
  absl::StatusOr<std::shared_ptr<const RowSource>> Bring(
      const std::vector<ChainMember>& chain);

  // Forgets the version brought last, so that the next Bring loads its base
  // afresh: for a version brought and then refused (another model).
  void Invalidate();

  struct Stats {
    uint64_t bytes = 0;        // SST files and memtables
    uint64_t cache_bytes = 0;  // block cache in use
    uint64_t cache_hits = 0;   // data block reads the cache answered
    uint64_t cache_misses = 0;
  };
  Stats stats() const;

  struct Db;
  struct Family;

 private:
  explicit VersionStore(const VersionStoreOptions& options);
  // Whether `chain` holds the versions brought so far and maybe more.
  bool Extends(const std::vector<ChainMember>& chain) const;
  absl::Status LoadBase(const ChainMember& base);
  absl::Status ApplyDelta(const ChainMember& delta);

  const VersionStoreOptions options_;
  std::shared_ptr<Db> db_;
  // The column family Bring writes to and what it holds; only Bring and
  // Invalidate touch them (one thread at a time).
  std::shared_ptr<Family> family_;
  uint64_t base_ = 0;     // its chain's base
  uint64_t applied_ = 0;  // the newest version applied
  // created_unix_seconds of base_..applied_: a chain extends them only when
  // it holds the same versions (not ones withdrawn and published again).
  std::vector<double> created_;
  int row_dim_ = 0;
  uint64_t next_family_ = 0;
};

}  // namespace sampan

#endif  // SAMPAN_SERVING_ROW_STORE_H_
