// VersionStore: the sparse rows of model versions in a local RocksDB
// database, for models larger than memory (serving.store_dir). Dense weights
// stay in memory (ScoringModel); only the rows live here.
//
// Layout: one database in `dir`. A base is loaded aside into a column family
// of its own, one SST file per part (SstFileWriter + IngestExternalFile, no
// Put per row); each delta after it is applied to that column family as one
// WriteBatch. Keys and values are sparse_table's (RowKey(0, key) -> the row's
// floats and a 4-byte trailer, here the version that wrote it), and so are
// the column family options (RowColumnFamilyOptions: Bloom filters, no
// compression) and the chunked MultiGet. Each family records which chain
// members it holds (their identities: a version's VERSION, an exported
// directory's files) in the batch that wrote them, so that a store reopened
// on the same directory builds on what it holds: a restart on the same
// versions loads nothing, one a few deltas behind applies only those.
// Families of a replaced base are dropped; a family whose record does not
// match the chain brought first after a start is dropped and the base
// loaded afresh.
//
// Reads: a hot tier of decoded rows (serving/hot_rows.h) answers what it
// holds; the other keys are read with MultiGet in key order through the
// View's snapshot, without filling RocksDB's block cache, and cached in the
// hot tier.
//
// Promises:
//   - A version is served from a View: its column family and a RocksDB
//     snapshot taken right after the version was applied, so a View reads
//     exactly one version however many deltas or bases follow (the hot tier
//     keeps that promise too: HotRows' epochs). A View keeps its column
//     family alive.
//   - Bring verifies every file it will read against its VERSION before it
//     writes anything; a corrupt or half-written version changes nothing.
//     A delta is applied whole or not at all (one WriteBatch).
//   - Rows of all zeros are no rows (trainer/model_version.h): dropped from
//     a base, deletions in a delta. Parts sharing a key: part 0's row stands,
//     as ReadSparseRows reads them.
//   - Memory: memory_budget_bytes bounds the store's memory as a table's
//     hot_tier_bytes bounds a table's: up to two memtables of a sixteenth
//     each, a 1 MiB block cache, a sixteenth of headroom, RocksDB's index and
//     filter blocks (outside its caches: all of them stay in memory), and
//     the hot tier all the rest, at least an eighth (stats().memory_bytes is
//     the sum). While a version loads, one part file (a base part, or every
//     part of one delta) is held in memory besides.
//   - Durability: none needed (the versions root has everything); a crash
//     loses at most the deltas applied since the last memtable flush, which
//     the next start applies again.
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
  // The database's directory, created if missing; what an earlier store
  // left there is built on when it holds the same versions (see above).
  std::string dir;
  // The store's memory (see the promises above).
  uint64_t memory_budget_bytes = 256ull << 20;
  // Keeps only the keys for which keep(key) is true (a lookup shard's keys,
  // serving/lookup_service.h); null keeps all.
  std::function<bool(uint64_t)> keep;
  // Names `keep` ("" for null): rows an earlier store kept under another
  // name are not built on.
  std::string keep_id;
};

class VersionStore {
 public:
  // Opens the database in options.dir, or a new one (a database RocksDB
  // cannot open is wiped, with a warning). Unavailable when the directory
  // cannot be made or a new database cannot be opened.
  static absl::StatusOr<std::unique_ptr<VersionStore>> Open(
      const VersionStoreOptions& options);
  ~VersionStore();
  VersionStore(const VersionStore&) = delete;
  VersionStore& operator=(const VersionStore&) = delete;

  // Brings the store to the newest member of `chain` (base first, as
  // ReadChainMembers or ResolveChain return it) and returns a View of that
  // version's rows. Applies only the deltas past the members held (brought
  // last, or by the store that left the directory) when `chain` starts with
  // them; otherwise loads the chain's base aside into a new column family.
  // Errors: the verification's DataLoss naming the file; FailedPrecondition for
  // rows of another width; Unavailable for I/O. After an error, every View
  // handed out reads as before.
  absl::StatusOr<std::shared_ptr<const RowSource>> Bring(
      const std::vector<ChainMember>& chain);

  // Forgets the version brought last, so that the next Bring loads its base
  // afresh: for a version brought and then refused (another model).
  void Invalidate();

  struct Stats {
    uint64_t memory_bytes = 0;  // what the budget bounds (see above)
    uint64_t bytes = 0;         // SST files and memtables
    uint64_t cache_bytes = 0;   // block cache in use
    uint64_t cache_hits = 0;    // data block reads the cache answered
    uint64_t cache_misses = 0;
    uint64_t hot_rows = 0;    // decoded rows in the hot tier
    uint64_t hot_bytes = 0;   // their memory
    uint64_t hot_hits = 0;    // keys the hot tier answered
    uint64_t hot_misses = 0;  // keys read from RocksDB (or without a row)
  };
  Stats stats() const;

  struct Db;
  struct Family;

 private:
  explicit VersionStore(const VersionStoreOptions& options);
  // Opens the database, keeps the newest family of an earlier store whose
  // record fits (Adopt) and drops the others.
  absl::Status OpenDb();
  // Takes `family` as the one Bring builds on if its record is complete
  // and its key filter this store's.
  bool Adopt(const std::shared_ptr<Family>& family);
  // The record of family_ (members_, row_dim_).
  std::string Meta() const;
  absl::Status LoadBase(const ChainMember& base, const std::string& id);
  absl::Status ApplyDelta(const ChainMember& delta, const std::string& id);
  // Gives the hot tier what the rest of the store leaves of the budget.
  void SizeHotTier();

  const VersionStoreOptions options_;
  std::shared_ptr<Db> db_;
  // The column family Bring writes to and the identities of the chain
  // members it holds, base first; only Open, Bring and Invalidate touch
  // them (one thread at a time).
  std::shared_ptr<Family> family_;
  std::vector<std::string> members_;
  int row_dim_ = 0;
  uint64_t next_family_ = 0;
  // Bumped by every Bring: the hot tier's epoch of the View it returns.
  uint64_t epoch_ = 0;
};

}  // namespace sampan

#endif  // SAMPAN_SERVING_ROW_STORE_H_
