#include "serving/row_store.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/hash.h"
#include "common/log.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/statistics.h"
#include "serving/hot_rows.h"
#include "sparse_table/row_store.h"

namespace sampan {

// The open database; closed when the store and every Family are gone.
struct VersionStore::Db {
  std::unique_ptr<rocksdb::DB> db;
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::Statistics> statistics;
  std::shared_ptr<HotRows> hot;
  rocksdb::ColumnFamilyOptions cf_options;
  std::string ingest_dir;
  std::atomic<uint64_t> next_file{0};

  ~Db() {
    if (db != nullptr) db->Close().PermitUncheckedError();
  }
};

// One base's column family. Dropped when the last holder lets it go if it
// was superseded (a newer base, or forgotten); kept in the directory
// otherwise, for the next start (see Open).
struct VersionStore::Family {
  std::shared_ptr<Db> db;
  rocksdb::ColumnFamilyHandle* cf = nullptr;
  std::atomic<bool> superseded{false};

  ~Family() {
    if (superseded) {
      rocksdb::Status s = db->db->DropColumnFamily(cf);
      if (!s.ok()) {
        SAMPAN_LOG(WARNING) << "serve: cannot drop column family "
                            << cf->GetName() << ": " << s.ToString();
      }
    }
    db->db->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
  }
};

namespace {

namespace fs = std::filesystem;

// The family's record of what it holds ("m" sorts before every row key,
// "r..."): kMetaHeader, then "keep <keep_id>", "row_dim <d>" and one
// "member <identity>" line per chain member applied, base first. Written in
// the same batch as the rows it describes.
constexpr char kMetaKey[] = "m";
// Version 2: rows under RowKey(0, key) (sparse_table's shard-prefixed key,
// with the store as one range). A family of version 1 is not adopted: the
// base is loaded afresh.
constexpr char kMetaHeader[] = "sampan-serving-store 2";
// The store is not split by shard: one key range, so that keys sorted
// ascending are in their row keys' order.
constexpr uint32_t kOneRange = 1;

// Rows of a base part read at a time (~5 MB of dim-16 rows).
constexpr size_t kLoadChunkRows = 1 << 16;

bool AllZeros(const float* row, int dim) {
  return std::all_of(row, row + dim, [](float x) { return x == 0.0f; });
}

// A row's stored value: its floats, then the LE32 version that wrote it.
std::string RowValue(const float* row, int dim, uint64_t version) {
  std::string v(reinterpret_cast<const char*>(row), size_t(dim) * 4);
  const uint32_t stamp = uint32_t(version);
  v.append(reinterpret_cast<const char*>(&stamp), 4);
  return v;
}

// One version's rows as its View reads them: the hot tier's rows read at its
// epoch or before, then the others through its RocksDB snapshot in key order
// (RocksDB's batches then walk each file's blocks in order), cached in the
// hot tier for the calls after it.
class View final : public RowSource {
 public:
  View(std::shared_ptr<VersionStore::Family> family,
       std::shared_ptr<HotRows> hot, uint64_t epoch, int row_dim, uint64_t rows)
      : family_(std::move(family)),
        hot_(std::move(hot)),
        epoch_(epoch),
        row_dim_(row_dim),
        rows_(rows),
        snapshot_(family_->db->db->GetSnapshot()) {}
  ~View() override { family_->db->db->ReleaseSnapshot(snapshot_); }

  int row_dim() const override { return row_dim_; }
  uint64_t row_count() const override { return rows_; }

  absl::Status Lookup(absl::Span<const uint64_t> keys, float* rows,
                      uint8_t* found) const override {
    std::vector<uint32_t> misses;
    hot_->Find(keys, epoch_, row_dim_, rows, found, &misses);
    if (misses.empty()) return absl::OkStatus();
    std::sort(misses.begin(), misses.end(),
              [&](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
    std::vector<uint64_t> sorted(misses.size());
    for (size_t j = 0; j < misses.size(); ++j) sorted[j] = keys[misses[j]];
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot_;
    // The hot tier caches decoded rows; a cached 4 KiB block would hold one
    // cold row for 50 times its size.
    ro.fill_cache = false;
    size_t bad = 0;
    const size_t bytes = size_t(row_dim_) * sizeof(float);
    absl::Status s = MultiGetRows(
        family_->db->db.get(), ro, family_->cf, kOneRange, sorted,
        [&](size_t j, absl::string_view value) {
          if (value.size() != bytes) {
            ++bad;
            return;
          }
          const uint32_t i = misses[j];
          std::memcpy(rows + size_t(i) * row_dim_, value.data(), bytes);
          found[i] = 1;
        },
        /*sorted=*/true);
    if (!s.ok()) return s;
    if (bad > 0) {
      return absl::DataLossError(absl::StrCat(
          "serving store: ", bad, " rows of another width than ", row_dim_));
    }
    hot_->Insert(keys, misses, epoch_, row_dim_, rows, found);
    return absl::OkStatus();
  }

 private:
  const std::shared_ptr<VersionStore::Family> family_;
  const std::shared_ptr<HotRows> hot_;
  const uint64_t epoch_;
  const int row_dim_;
  const uint64_t rows_;
  const rocksdb::Snapshot* const snapshot_;
};

// The part count of a chain member's directory.
absl::StatusOr<int> PartsOf(const ChainMember& member) {
  JobConfig config;
  absl::StatusOr<ModelManifest> manifest =
      ReadModelManifest(member.dir, &config);
  if (!manifest.ok()) return manifest.status();
  return manifest->sparse_parts;
}

// What identifies a chain member's content: a version by its VERSION (its
// number, creation time and every file's size and CRC); an exported model
// directory, which has none, by its path and its files' names, sizes and
// modification times.
std::string MemberIdentity(const ChainMember& member) {
  if (member.version.format() != 0) {
    return absl::StrFormat("v%d-%016x", member.version.version(),
                           FeatureSign(0, member.version.SerializeAsString()));
  }
  std::error_code ec;
  std::vector<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(member.dir, ec)) {
    const std::string name = e.path().filename().string();
    const auto size = e.file_size(ec);
    const auto mtime = e.last_write_time(ec).time_since_epoch().count();
    files.push_back(absl::StrCat(name, ":", size, ":", mtime));
  }
  std::sort(files.begin(), files.end());
  const std::string dir = fs::absolute(member.dir, ec).lexically_normal();
  return absl::StrFormat("x-%016x",
                         FeatureSign(0, dir + "|" + absl::StrJoin(files, "|")));
}

uint64_t Ticker(const rocksdb::Statistics& s, uint32_t ticker) {
  return s.getTickerCount(ticker);
}

uint64_t IntProperty(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                     const std::string& name) {
  uint64_t v = 0;
  if (cf == nullptr) {
    db->GetAggregatedIntProperty(name, &v);
  } else {
    db->GetIntProperty(cf, name, &v);
  }
  return v;
}

}  // namespace

absl::StatusOr<std::unique_ptr<VersionStore>> VersionStore::Open(
    const VersionStoreOptions& options) {
  std::unique_ptr<VersionStore> store(new VersionStore(options));
  auto db = std::make_shared<Db>();
  // The budget (row_store.h): memtables of a sixteenth each, a block cache
  // of 1 MiB that row reads do not fill, the hot tier the rest but index and
  // filter blocks and a headroom (sized once a version is in, SizeHotTier).
  TableOptions table;
  table.hot_tier_bytes = options.memory_budget_bytes / 2;
  table.block_cache_bytes = 1 << 20;
  db->cache = rocksdb::NewLRUCache(table.block_cache_bytes);
  db->cf_options = RowColumnFamilyOptions(table, db->cache);
  db->statistics = rocksdb::CreateDBStatistics();
  db->statistics->set_stats_level(rocksdb::StatsLevel::kExceptTimers);
  db->ingest_dir = options.dir + "/ingest";
  db->hot = std::make_shared<HotRows>(options.memory_budget_bytes / 2);
  store->db_ = db;
  absl::Status s = store->OpenDb();
  if (!s.ok()) {
    SAMPAN_LOG(WARNING) << "serve: not reusing the store in " << options.dir
                        << " (" << s.message() << "); starting it afresh";
    store->family_ = nullptr;
    db->db = nullptr;
    std::error_code ec;
    fs::remove_all(options.dir, ec);
    s = store->OpenDb();
  }
  if (!s.ok()) return absl::UnavailableError(s.message());
  return store;
}

absl::Status VersionStore::OpenDb() {
  std::error_code ec;
  fs::remove_all(db_->ingest_dir, ec);  // files a crash left behind
  fs::create_directories(db_->ingest_dir, ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat(
        "serving.store_dir: cannot create ", options_.dir, ": ", ec.message()));
  }
  rocksdb::DBOptions dbo;
  dbo.create_if_missing = true;
  dbo.statistics = db_->statistics;
  dbo.IncreaseParallelism(2);
  std::vector<std::string> names;
  if (!rocksdb::DB::ListColumnFamilies(dbo, options_.dir, &names).ok()) {
    names = {rocksdb::kDefaultColumnFamilyName};  // a new database
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const std::string& n : names) descs.emplace_back(n, db_->cf_options);
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  absl::Status s = FromRocksStatus(
      rocksdb::DB::Open(dbo, options_.dir, descs, &handles, &raw),
      "serving store: open " + options_.dir);
  if (!s.ok()) return s;
  db_->db.reset(raw);
  // Families of earlier runs: the newest one whose record is complete and
  // whose key filter is this store's is kept for Bring to build on; the
  // others are dropped.
  std::vector<std::shared_ptr<Family>> families;
  for (size_t i = 0; i < handles.size(); ++i) {
    if (names[i] == rocksdb::kDefaultColumnFamilyName) {
      raw->DestroyColumnFamilyHandle(handles[i]).PermitUncheckedError();
      continue;
    }
    auto family = std::make_shared<Family>();
    family->db = db_;
    family->cf = handles[i];
    family->superseded = true;
    families.push_back(family);
    uint64_t number = 0;
    std::vector<std::string> parts = absl::StrSplit(names[i], '-');
    if (parts.size() == 3 && absl::SimpleAtoi(parts[2], &number)) {
      next_family_ = std::max(next_family_, number + 1);
    }
  }
  std::sort(
      families.begin(), families.end(),
      [](const std::shared_ptr<Family>& a, const std::shared_ptr<Family>& b) {
        return a->cf->GetID() > b->cf->GetID();
      });
  for (const std::shared_ptr<Family>& family : families) {
    if (Adopt(family)) break;
  }
  return absl::OkStatus();
}

bool VersionStore::Adopt(const std::shared_ptr<Family>& family) {
  std::string meta;
  if (!db_->db->Get(rocksdb::ReadOptions(), family->cf, kMetaKey, &meta).ok()) {
    return false;
  }
  std::vector<std::string> lines = absl::StrSplit(meta, '\n');
  if (lines.size() < 4 || lines[0] != kMetaHeader ||
      lines[1] != "keep " + options_.keep_id ||
      !absl::StartsWith(lines[2], "row_dim ") ||
      !absl::SimpleAtoi(lines[2].substr(8), &row_dim_)) {
    return false;
  }
  std::vector<std::string> members;
  for (size_t i = 3; i < lines.size(); ++i) {
    if (!absl::StartsWith(lines[i], "member ")) return false;
    members.push_back(lines[i].substr(7));
  }
  family->superseded = false;
  family_ = family;
  members_ = std::move(members);
  return true;
}

VersionStore::VersionStore(const VersionStoreOptions& options)
    : options_(options) {}

VersionStore::~VersionStore() {
  // The rows of deltas are in memtables only (no WAL): into files, so that
  // the next start builds on them.
  if (family_ != nullptr) {
    rocksdb::FlushOptions fo;
    fo.wait = true;
    db_->db->Flush(fo, family_->cf).PermitUncheckedError();
  }
}

void VersionStore::Invalidate() {
  if (family_ != nullptr) family_->superseded = true;
  family_ = nullptr;
  members_.clear();
}

std::string VersionStore::Meta() const {
  std::string meta = absl::StrCat(kMetaHeader, "\nkeep ", options_.keep_id,
                                  "\nrow_dim ", row_dim_);
  for (const std::string& m : members_) absl::StrAppend(&meta, "\nmember ", m);
  return meta;
}

absl::StatusOr<std::shared_ptr<const RowSource>> VersionStore::Bring(
    const std::vector<ChainMember>& chain) {
  if (chain.empty()) return absl::InvalidArgumentError("empty chain");
  std::vector<std::string> ids;
  for (const ChainMember& member : chain) ids.push_back(MemberIdentity(member));
  // The chain holds the members brought so far, and maybe more.
  const bool extend = family_ != nullptr && ids.size() >= members_.size() &&
                      std::equal(members_.begin(), members_.end(), ids.begin());
  const size_t first = extend ? members_.size() : 0;
  for (size_t i = first; i < chain.size(); ++i) {
    absl::Status s = VerifyChainMember(chain[i]);
    if (!s.ok()) return s;
  }
  // From here on only the View returned below caches the rows it reads.
  db_->hot->Stamp(++epoch_);
  if (!extend) {
    Invalidate();
    absl::Status s = LoadBase(chain.front(), ids.front());
    if (!s.ok()) return s;
  }
  for (size_t i = std::max<size_t>(first, 1); i < chain.size(); ++i) {
    // The family holds the deltas before a failed one, whole.
    absl::Status s = ApplyDelta(chain[i], ids[i]);
    if (!s.ok()) return s;
  }
  SizeHotTier();
  const uint64_t rows =
      IntProperty(db_->db.get(), family_->cf, "rocksdb.estimate-num-keys");
  return std::make_shared<View>(family_, db_->hot, epoch_, row_dim_, rows);
}

void VersionStore::SizeHotTier() {
  // What RocksDB keeps outside its caches for the files (index and filter
  // blocks), up to two memtables, and a sixteenth of headroom (reads in
  // flight pin up to 1 MiB of blocks each, RocksDB's own structures).
  const uint64_t budget = options_.memory_budget_bytes;
  const uint64_t readers =
      IntProperty(db_->db.get(), nullptr, "rocksdb.estimate-table-readers-mem");
  const uint64_t others =
      readers + 2 * db_->cf_options.write_buffer_size + (1 << 20) + budget / 16;
  const uint64_t floor = budget / 8;
  if (others + floor > budget) {
    SAMPAN_LOG(WARNING) << "serve: the store's index and filter blocks ("
                        << (readers >> 20) << " MB) leave less than an eighth "
                        << "of serving.memory_budget_mb (" << (budget >> 20)
                        << " MB) to the hot tier; it takes that eighth";
  }
  db_->hot->set_budget(std::max(floor, budget - std::min(budget, others)));
}

absl::Status VersionStore::LoadBase(const ChainMember& base,
                                    const std::string& id) {
  absl::StatusOr<int> parts = PartsOf(base);
  if (!parts.ok()) return parts.status();
  db_->hot->Reset();
  auto family = std::make_shared<Family>();
  family->db = db_;
  family->superseded = true;  // until it holds the whole base
  const std::string name =
      absl::StrFormat("base-%06d-%d", base.version.version(), next_family_++);
  absl::Status s = FromRocksStatus(
      db_->db->CreateColumnFamily(db_->cf_options, name, &family->cf),
      "serving store: create column family " + name);
  if (!s.ok()) return s;
  const rocksdb::Options sst_options(rocksdb::DBOptions(), db_->cf_options);
  row_dim_ = 0;
  // Last part first: a key in several parts keeps part 0's row, ingested
  // last (newest).
  SparsePart rows;
  for (int part = *parts - 1; part >= 0; --part) {
    // A chunk of the part at a time: a part may be larger than the budget.
    absl::StatusOr<std::unique_ptr<SparsePartReader>> reader =
        SparsePartReader::Open(base.dir, part, row_dim_);
    if (!reader.ok()) return reader.status();
    row_dim_ = (*reader)->row_dim();
    const int d = row_dim_;
    const std::string path =
        absl::StrCat(db_->ingest_dir, "/", db_->next_file.fetch_add(1), ".sst");
    // The file's pages stay in the OS's page cache (SstFileWriter drops them
    // by default): the first reads of a store just loaded then read memory,
    // not the disk.
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), sst_options,
                                  family->cf, /*invalidate_page_cache=*/false);
    rocksdb::Status rs = writer.Open(path);
    size_t written = 0;
    absl::StatusOr<bool> more = true;
    while (rs.ok() && (more = (*reader)->Next(kLoadChunkRows, &rows)).ok() &&
           *more) {
      for (size_t i = 0; rs.ok() && i < rows.keys.size(); ++i) {
        const uint64_t key = rows.keys[i];
        const float* row = rows.rows.data() + i * d;
        if (AllZeros(row, d) || (options_.keep && !options_.keep(key))) {
          continue;
        }
        rs = writer.Put(RowKey(0, key),
                        RowValue(row, d, base.version.version()));
        ++written;
      }
    }
    if (!more.ok()) return more.status();
    if (rs.ok() && written > 0) {
      rs = writer.Finish();
      rocksdb::IngestExternalFileOptions io;
      io.move_files = true;
      if (rs.ok()) rs = db_->db->IngestExternalFile(family->cf, {path}, io);
    }
    std::error_code ec;
    fs::remove(path, ec);
    s = FromRocksStatus(
        rs, absl::StrFormat("serving store: load %s/sparse-%05d.bin", base.dir,
                            part));
    if (!s.ok()) return s;
  }
  members_ = {id};
  family_ = std::move(family);
  // The record into a file at once (one key): a base outlives a crash.
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  s = FromRocksStatus(db_->db->Put(wo, family_->cf, kMetaKey, Meta()),
                      "serving store: record " + base.dir);
  rocksdb::FlushOptions fo;
  fo.wait = true;
  if (s.ok()) {
    s = FromRocksStatus(db_->db->Flush(fo, family_->cf),
                        "serving store: record " + base.dir);
  }
  if (!s.ok()) {
    Invalidate();
    return s;
  }
  family_->superseded = false;
  return absl::OkStatus();
}

absl::Status VersionStore::ApplyDelta(const ChainMember& delta,
                                      const std::string& id) {
  absl::StatusOr<int> parts = PartsOf(delta);
  if (!parts.ok()) return parts.status();
  rocksdb::WriteBatch batch;
  std::vector<uint64_t> changed;
  // Last part first: in a WriteBatch the last write of a key stands.
  for (int part = *parts - 1; part >= 0; --part) {
    absl::StatusOr<SparsePart> rows = ReadSparsePart(delta.dir, part, row_dim_);
    if (!rows.ok()) return rows.status();
    const int d = row_dim_;
    for (size_t i = 0; i < rows->keys.size(); ++i) {
      const uint64_t key = rows->keys[i];
      if (options_.keep && !options_.keep(key)) continue;
      changed.push_back(key);
      const float* row = rows->rows.data() + i * d;
      if (AllZeros(row, d)) {
        batch.Delete(family_->cf, RowKey(0, key));
      } else {
        batch.Put(family_->cf, RowKey(0, key),
                  RowValue(row, d, delta.version.version()));
      }
    }
  }
  members_.push_back(id);
  batch.Put(family_->cf, kMetaKey, Meta());
  // No WAL: the rows and the record of them reach the files together (a
  // memtable is flushed whole; the store flushes at close), so a crash
  // loses the newest deltas, never half of one, and the next start applies
  // them again.
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  absl::Status s = FromRocksStatus(db_->db->Write(wo, &batch),
                                   "serving store: apply " + delta.dir);
  if (!s.ok()) {
    members_.pop_back();
    return s;
  }
  db_->hot->Forget(changed);
  return absl::OkStatus();
}

VersionStore::Stats VersionStore::stats() const {
  Stats out;
  rocksdb::DB* db = db_->db.get();
  const uint64_t mem =
      IntProperty(db, nullptr, "rocksdb.cur-size-all-mem-tables");
  out.bytes = IntProperty(db, nullptr, "rocksdb.total-sst-files-size") + mem;
  out.cache_bytes = db_->cache->GetUsage();
  out.cache_hits = Ticker(*db_->statistics, rocksdb::BLOCK_CACHE_DATA_HIT);
  out.cache_misses = Ticker(*db_->statistics, rocksdb::BLOCK_CACHE_DATA_MISS);
  const HotRows::Stats hot = db_->hot->stats();
  out.hot_rows = hot.rows;
  out.hot_bytes = hot.bytes;
  out.hot_hits = hot.hits;
  out.hot_misses = hot.misses;
  out.memory_bytes =
      hot.bytes + out.cache_bytes + mem +
      IntProperty(db, nullptr, "rocksdb.estimate-table-readers-mem");
  return out;
}

}  // namespace sampan
