#include "serving/row_store.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "rocksdb/cache.h"
#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/statistics.h"
#include "sparse_table/row_store.h"

namespace sampan {

// The open database; closed when the store and every Family are gone.
struct VersionStore::Db {
  std::unique_ptr<rocksdb::DB> db;
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::Statistics> statistics;
  rocksdb::ColumnFamilyOptions cf_options;
  std::string ingest_dir;
  std::atomic<uint64_t> next_file{0};

  ~Db() {
    if (db != nullptr) db->Close().PermitUncheckedError();
  }
};

// One base's column family; dropped when the last holder lets it go.
struct VersionStore::Family {
  std::shared_ptr<Db> db;
  rocksdb::ColumnFamilyHandle* cf = nullptr;

  ~Family() {
    rocksdb::Status s = db->db->DropColumnFamily(cf);
    if (!s.ok()) {
      SAMPAN_LOG(WARNING) << "serve: cannot drop column family "
                          << cf->GetName() << ": " << s.ToString();
    }
    db->db->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
  }
};

namespace {

namespace fs = std::filesystem;

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

// One version's rows as its View reads them.
class View final : public RowSource {
 public:
  View(std::shared_ptr<VersionStore::Family> family, int row_dim, uint64_t rows)
      : family_(std::move(family)),
        row_dim_(row_dim),
        rows_(rows),
        snapshot_(family_->db->db->GetSnapshot()) {}
  ~View() override { family_->db->db->ReleaseSnapshot(snapshot_); }

  int row_dim() const override { return row_dim_; }
  uint64_t row_count() const override { return rows_; }

  absl::Status Lookup(absl::Span<const uint64_t> keys, float* rows,
                      uint8_t* found) const override {
    std::fill_n(rows, keys.size() * row_dim_, 0.0f);
    std::fill_n(found, keys.size(), 0);
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot_;
    size_t bad = 0;
    const size_t bytes = size_t(row_dim_) * sizeof(float);
    absl::Status s =
        MultiGetRows(family_->db->db.get(), ro, family_->cf, keys,
                     [&](size_t i, absl::string_view value) {
                       if (value.size() != bytes) {
                         ++bad;
                         return;
                       }
                       std::memcpy(rows + i * row_dim_, value.data(), bytes);
                       found[i] = 1;
                     });
    if (!s.ok()) return s;
    if (bad > 0) {
      return absl::DataLossError(absl::StrCat(
          "serving store: ", bad, " rows of another width than ", row_dim_));
    }
    return absl::OkStatus();
  }

 private:
  const std::shared_ptr<VersionStore::Family> family_;
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

uint64_t Ticker(const rocksdb::Statistics& s, uint32_t ticker) {
  return s.getTickerCount(ticker);
}

}  // namespace

absl::StatusOr<std::unique_ptr<VersionStore>> VersionStore::Open(
    const VersionStoreOptions& options) {
  std::error_code ec;
  fs::remove_all(options.dir, ec);
  fs::create_directories(options.dir + "/ingest", ec);
  if (ec) {
    return absl::UnavailableError(absl::StrCat(
        "serving.store_dir: cannot create ", options.dir, ": ", ec.message()));
  }
  std::unique_ptr<VersionStore> store(new VersionStore(options));
  auto db = std::make_shared<Db>();
  TableOptions table;
  table.hot_tier_bytes = options.memory_budget_bytes;
  table.block_cache_bytes =
      std::max<uint64_t>(options.memory_budget_bytes / 2, 1 << 20);
  db->cache = rocksdb::NewLRUCache(table.block_cache_bytes);
  db->cf_options = RowColumnFamilyOptions(table, db->cache);
  db->statistics = rocksdb::CreateDBStatistics();
  db->statistics->set_stats_level(rocksdb::StatsLevel::kExceptTimers);
  db->ingest_dir = options.dir + "/ingest";
  rocksdb::Options o(rocksdb::DBOptions(), db->cf_options);
  o.create_if_missing = true;
  o.statistics = db->statistics;
  o.IncreaseParallelism(2);
  rocksdb::DB* raw = nullptr;
  absl::Status s = FromRocksStatus(rocksdb::DB::Open(o, options.dir, &raw),
                                   "serving store: open " + options.dir);
  if (!s.ok()) return absl::UnavailableError(s.message());
  db->db.reset(raw);
  store->db_ = std::move(db);
  return store;
}

VersionStore::VersionStore(const VersionStoreOptions& options)
    : options_(options) {}

VersionStore::~VersionStore() = default;

void VersionStore::Invalidate() {
  family_ = nullptr;
  base_ = applied_ = 0;
  created_.clear();
}

bool VersionStore::Extends(const std::vector<ChainMember>& chain) const {
  if (family_ == nullptr || chain.front().version.format() == 0 ||
      chain.front().version.version() != base_ ||
      chain.back().version.version() < applied_ ||
      chain.size() < created_.size()) {
    return false;
  }
  for (size_t i = 0; i < created_.size(); ++i) {
    if (chain[i].version.created_unix_seconds() != created_[i]) return false;
  }
  return true;
}

absl::StatusOr<std::shared_ptr<const RowSource>> VersionStore::Bring(
    const std::vector<ChainMember>& chain) {
  if (chain.empty()) return absl::InvalidArgumentError("empty chain");
  const bool extend = Extends(chain);
  const size_t first = extend ? created_.size() : 0;
  for (size_t i = first; i < chain.size(); ++i) {
    absl::Status s = VerifyChainMember(chain[i]);
    if (!s.ok()) return s;
  }
  if (!extend) {
    Invalidate();
    absl::Status s = LoadBase(chain.front());
    if (!s.ok()) return s;
    applied_ = base_ = chain.front().version.version();
    created_.push_back(chain.front().version.created_unix_seconds());
  }
  for (size_t i = std::max<size_t>(first, 1); i < chain.size(); ++i) {
    absl::Status s = ApplyDelta(chain[i]);
    if (!s.ok()) return s;  // the family holds the deltas before it, whole
    applied_ = chain[i].version.version();
    created_.push_back(chain[i].version.created_unix_seconds());
  }
  uint64_t rows = 0;
  db_->db->GetIntProperty(family_->cf, "rocksdb.estimate-num-keys", &rows);
  return std::make_shared<View>(family_, row_dim_, rows);
}

absl::Status VersionStore::LoadBase(const ChainMember& base) {
  absl::StatusOr<int> parts = PartsOf(base);
  if (!parts.ok()) return parts.status();
  auto family = std::make_shared<Family>();
  family->db = db_;
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
  for (int part = *parts - 1; part >= 0; --part) {
    absl::StatusOr<SparsePart> rows = ReadSparsePart(base.dir, part, row_dim_);
    if (!rows.ok()) return rows.status();
    row_dim_ = rows->row_dim;
    const int d = row_dim_;
    const std::string path =
        absl::StrCat(db_->ingest_dir, "/", db_->next_file.fetch_add(1), ".sst");
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), sst_options,
                                  family->cf);
    rocksdb::Status rs = writer.Open(path);
    size_t written = 0;
    for (size_t i = 0; rs.ok() && i < rows->keys.size(); ++i) {
      const uint64_t key = rows->keys[i];
      const float* row = rows->rows.data() + i * d;
      if (AllZeros(row, d) || (options_.keep && !options_.keep(key))) continue;
      rs = writer.Put(RowKey(key), RowValue(row, d, base.version.version()));
      ++written;
    }
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
  family_ = std::move(family);
  return absl::OkStatus();
}

absl::Status VersionStore::ApplyDelta(const ChainMember& delta) {
  absl::StatusOr<int> parts = PartsOf(delta);
  if (!parts.ok()) return parts.status();
  rocksdb::WriteBatch batch;
  // Last part first: in a WriteBatch the last write of a key stands.
  for (int part = *parts - 1; part >= 0; --part) {
    absl::StatusOr<SparsePart> rows = ReadSparsePart(delta.dir, part, row_dim_);
    if (!rows.ok()) return rows.status();
    const int d = row_dim_;
    for (size_t i = 0; i < rows->keys.size(); ++i) {
      const uint64_t key = rows->keys[i];
      if (options_.keep && !options_.keep(key)) continue;
      const float* row = rows->rows.data() + i * d;
      if (AllZeros(row, d)) {
        batch.Delete(family_->cf, RowKey(key));
      } else {
        batch.Put(family_->cf, RowKey(key),
                  RowValue(row, d, delta.version.version()));
      }
    }
  }
  // The store is rebuilt at every start: no WAL.
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  return FromRocksStatus(db_->db->Write(wo, &batch),
                         "serving store: apply " + delta.dir);
}

VersionStore::Stats VersionStore::stats() const {
  Stats out;
  uint64_t sst = 0, mem = 0;
  db_->db->GetAggregatedIntProperty("rocksdb.total-sst-files-size", &sst);
  db_->db->GetAggregatedIntProperty("rocksdb.cur-size-all-mem-tables", &mem);
  out.bytes = sst + mem;
  out.cache_bytes = db_->cache->GetUsage();
  out.cache_hits = Ticker(*db_->statistics, rocksdb::BLOCK_CACHE_DATA_HIT);
  out.cache_misses = Ticker(*db_->statistics, rocksdb::BLOCK_CACHE_DATA_MISS);
  return out;
}

}  // namespace sampan
