#include "sparse_table/row_store.h"

#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/file_digest.h"
#include "common/hash.h"
#include "common/thread_priority.h"
#include "rocksdb/cache.h"
#include "rocksdb/env.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/table.h"
#include "rocksdb/utilities/checkpoint.h"
#include "sparse_table/accessor.h"

namespace sampan {

// One open database, shared by the tables of a directory. Its column family
// handles live as long as it does.
struct SharedDb {
  std::unique_ptr<rocksdb::DB> db;
  std::mutex mu;
  std::map<std::string, rocksdb::ColumnFamilyHandle*> cfs ABSL_GUARDED_BY(mu);

  ~SharedDb() {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [name, cf] : cfs) db->DestroyColumnFamilyHandle(cf);
    db->Close();
  }
};

absl::Status FromRocksStatus(const rocksdb::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  const std::string msg = absl::StrCat(what, ": ", s.ToString());
  if (s.IsIOError()) return absl::UnavailableError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsInvalidArgument()) return absl::InvalidArgumentError(msg);
  return absl::InternalError(msg);
}

namespace {

absl::Status FromRocks(const rocksdb::Status& s, absl::string_view what) {
  return FromRocksStatus(s, what);
}

void PutBe(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(char(v >> (8 * i)));
}

uint64_t GetBe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | uint8_t(p[i]);
  return v;
}

}  // namespace

std::string ShardKeyPrefix(char tag, uint32_t shard) {
  std::string k(1, tag);
  k.reserve(13);
  PutBe(&k, shard, 4);
  return k;
}

std::string RowKey(uint32_t shard, uint64_t key) {
  std::string k = ShardKeyPrefix('s', shard);
  PutBe(&k, key, 8);
  return k;
}

std::string SequenceKey(uint32_t shard, uint64_t writer) {
  std::string k = ShardKeyPrefix('q', shard);
  PutBe(&k, writer, 8);
  return k;
}

std::string RowKeyOf(uint64_t key, uint32_t num_shards) {
  return RowKey(ShardOf(key, num_shards), key);
}

uint64_t KeyOfRowKey(absl::string_view row_key) {
  return GetBe(row_key.data() + 5, 8);
}

rocksdb::ColumnFamilyOptions RowColumnFamilyOptions(
    const TableOptions& o, std::shared_ptr<rocksdb::Cache> block_cache) {
  rocksdb::ColumnFamilyOptions cf;
  rocksdb::BlockBasedTableOptions t;
  // Point lookups dominate: a Bloom filter spares most misses a disk read.
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  // The table's memory budget (sparse_table.h): up to a quarter for the two
  // memtables; the block cache only as asked for.
  const uint64_t eighth =
      std::clamp<uint64_t>(o.hot_tier_bytes / 8, 1 << 20, 64 << 20);
  t.block_cache =
      block_cache != nullptr
          ? std::move(block_cache)
          : rocksdb::NewLRUCache(o.block_cache_bytes > 0 ? o.block_cache_bytes
                                                         : 1 << 20);
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  cf.write_buffer_size = eighth;
  cf.max_write_buffer_number = 2;
  // A compaction holds a hash of every key of the file it writes until the
  // file's Bloom filter is built: files of an eighth of the budget keep
  // that within it (the default 64 MiB files held ~5 MB apiece, 2 at once).
  cf.target_file_size_base = eighth;
  // A push looks up every key it changes, and new keys miss: a memtable
  // Bloom filter answers those misses without walking the skiplist.
  cf.memtable_whole_key_filtering = true;
  cf.memtable_prefix_bloom_size_ratio = 0.05;
  // Rows are random-looking floats: compression costs CPU and saves little.
  cf.compression = rocksdb::kNoCompression;
  return cf;
}

// Reads in chunks: RocksDB pins every data block a MultiGet touches until
// the call returns, and a batch of 4,096 cold keys touches ~4,096 blocks
// (16 MiB, measured with heaptrack) that no memory budget counts. 256 keys
// pin at most 1 MiB and still fill RocksDB's internal batches of 32.
absl::Status MultiGetRows(
    rocksdb::DB* db, const rocksdb::ReadOptions& ro,
    rocksdb::ColumnFamilyHandle* cf, uint32_t num_shards,
    absl::Span<const uint64_t> keys,
    const std::function<void(size_t, absl::string_view)>& fn, bool sorted) {
  constexpr size_t kChunk = 256;
  std::string encoded[kChunk];
  rocksdb::Slice slices[kChunk];
  rocksdb::PinnableSlice found[kChunk];
  rocksdb::Status statuses[kChunk];
  for (size_t at = 0; at < keys.size(); at += kChunk) {
    const size_t n = std::min(kChunk, keys.size() - at);
    for (size_t i = 0; i < n; ++i) {
      encoded[i] = RowKeyOf(keys[at + i], num_shards);
      slices[i] = encoded[i];
    }
    db->MultiGet(ro, cf, n, slices, found, statuses, sorted);
    absl::Status st;
    for (size_t i = 0; i < n; ++i) {
      if (st.ok() && !statuses[i].IsNotFound()) {
        if (!statuses[i].ok()) {
          st = FromRocks(statuses[i], "MultiGet");
        } else if (found[i].size() < 4) {
          st = absl::DataLossError("short row");
        } else {
          fn(at + i, absl::string_view(found[i].data(), found[i].size() - 4));
        }
      }
      found[i].Reset();  // unpins the block
    }
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

namespace {

// Compactions can wait; a trainer's pull cannot. They ran at normal
// priority beside the pulls and took both cores of a 2-core pserver host for
// a quarter second at a time, most of the half-load pull p99 (pulls of
// 40-75 ms in exactly those windows). At nice 19 they still get every idle
// cycle, and when they fall behind, RocksDB's write stall slows the
// write-backs, whose backpressure slows the pushes, which frees the CPU.
// No table lock is held while waiting on a compaction, so the low priority
// cannot invert onto a pull. Memtable flushes (the high pool) stay at
// normal priority: a stalled flush stalls writes. RocksDB lowers a pool
// thread only when it next runs a job, so the threads already started are
// reniced here too (the first compaction of a fresh pserver ran at nice 0).
void LowerCompactionPriority() {
  rocksdb::Env::Default()->LowerThreadPoolCPUPriority(
      rocksdb::Env::Priority::LOW, rocksdb::CpuPriority::kLow);
  SetNiceOfThreadsNamed("rocksdb:low", kRocksDbLowNice);
}

std::mutex registry_mu;
absl::flat_hash_map<std::string, std::weak_ptr<SharedDb>>& Registry()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(registry_mu) {
  static auto* registry =
      new absl::flat_hash_map<std::string, std::weak_ptr<SharedDb>>();
  return *registry;
}

absl::StatusOr<std::shared_ptr<SharedDb>> OpenDb(const TableOptions& o) {
  const std::string dir =
      std::filesystem::absolute(o.data_dir).lexically_normal().string();
  std::lock_guard<std::mutex> lock(registry_mu);
  if (auto db = Registry()[dir].lock()) return db;
  // RocksDB fsyncs the files in its directory and the directory, never the
  // directory's own entry in its parent: a machine crash after a first start
  // would take the whole database with it.
  if (absl::Status st = CreateDirectoriesDurably(dir); !st.ok()) return st;
  rocksdb::DBOptions dbo;
  dbo.create_if_missing = true;
  dbo.create_missing_column_families = true;
  dbo.IncreaseParallelism(2);
  LowerCompactionPriority();
  std::vector<std::string> names;
  if (!rocksdb::DB::ListColumnFamilies(dbo, dir, &names).ok()) {
    names = {rocksdb::kDefaultColumnFamilyName};
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const std::string& n : names)
    descs.emplace_back(n, RowColumnFamilyOptions(o));
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  absl::Status st = FromRocks(
      rocksdb::DB::Open(dbo, dir, descs, &handles, &raw), "open " + dir);
  if (!st.ok()) return st;
  auto shared = std::make_shared<SharedDb>();
  shared->db.reset(raw);
  std::lock_guard<std::mutex> db_lock(shared->mu);
  for (size_t i = 0; i < names.size(); ++i) shared->cfs[names[i]] = handles[i];
  Registry()[dir] = shared;
  return shared;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RowStore>> RowStore::Open(
    const TableOptions& o) {
  if (o.data_dir.empty()) {
    return absl::InvalidArgumentError("RocksDB table needs a data_dir");
  }
  absl::StatusOr<std::shared_ptr<SharedDb>> shared = OpenDb(o);
  if (!shared.ok()) return shared.status();
  SharedDb& s = **shared;
  std::lock_guard<std::mutex> lock(s.mu);
  rocksdb::ColumnFamilyHandle*& cf = s.cfs[o.table_name];
  if (cf == nullptr) {
    absl::Status st = FromRocks(
        s.db->CreateColumnFamily(RowColumnFamilyOptions(o), o.table_name, &cf),
        "create column family " + o.table_name);
    if (!st.ok()) {
      s.cfs.erase(o.table_name);
      return st;
    }
  }
  std::unique_ptr<RowStore> store(new RowStore(
      *shared, cf, o.durability == Durability::kSync, o.data_dir, o));
  // Files written for ingestion live here until RocksDB links them; a
  // crash may leave some behind, never referenced by the database.
  std::error_code ec;
  std::filesystem::remove_all(store->tmp_dir_, ec);
  std::filesystem::create_directories(store->tmp_dir_, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("create ", store->tmp_dir_, ": ", ec.message()));
  }
  std::string epoch;
  if (s.db->Get(rocksdb::ReadOptions(), cf, "e", &epoch).ok() &&
      epoch.size() == 4) {
    uint32_t e;
    std::memcpy(&e, epoch.data(), 4);
    store->epoch_ = e;
  }
  if (absl::Status st = store->CheckLayout(); !st.ok()) return st;
  if (absl::Status st = store->PrefixOldRows(); !st.ok()) return st;
  return store;
}

absl::Status RowStore::CheckLayout() {
  std::string value;
  const rocksdb::Status s = db()->Get(rocksdb::ReadOptions(), cf_, "m", &value);
  if (s.ok()) {
    if (value.size() != 4) {
      return absl::DataLossError(
          absl::StrCat(dir_, ": table '", options_.table_name, "' has a ",
                       value.size(), "-byte row layout record"));
    }
    uint32_t code;
    std::memcpy(&code, value.data(), 4);
    if (absl::Status st = CheckRowLayout(options_, code, dir_); !st.ok()) {
      return st;
    }
  } else if (!s.IsNotFound()) {
    return FromRocks(s, "read row layout in " + dir_);
  } else {
    // A new table, or one from before layouts were recorded: FP32 rows.
    std::unique_ptr<rocksdb::Iterator> it(
        db()->NewIterator(rocksdb::ReadOptions(), cf_));
    it->Seek("r");
    const bool old_rows = it->Valid() && it->key().starts_with("r");
    it->Seek("s");
    if (old_rows || (it->Valid() && it->key().starts_with("s"))) {
      if (absl::Status st = CheckRowLayout(options_, 0, dir_); !st.ok()) {
        return st;
      }
    }
  }
  // The shard count: rows are found under their shard's prefix, so a table
  // opened with another count would miss every row it holds.
  const rocksdb::Status n = db()->Get(rocksdb::ReadOptions(), cf_, "n", &value);
  if (n.ok()) {
    uint32_t shards = 0;
    if (value.size() == 4) std::memcpy(&shards, value.data(), 4);
    if (shards != options_.num_shards) {
      return absl::FailedPreconditionError(absl::StrCat(
          dir_, ": table '", options_.table_name, "' was written with ", shards,
          " shards, not ", options_.num_shards,
          " (table.num_shards is fixed for a table's life)"));
    }
    if (s.ok()) return absl::OkStatus();
  } else if (!n.IsNotFound()) {
    return FromRocks(n, "read shard count in " + dir_);
  }
  rocksdb::WriteBatch wb;
  if (!s.ok()) {
    wb.Put(cf_, "m",
           rocksdb::Slice(reinterpret_cast<const char*>(&layout_), 4));
  }
  const uint32_t shards = options_.num_shards;
  wb.Put(cf_, "n", rocksdb::Slice(reinterpret_cast<const char*>(&shards), 4));
  return Write(&wb, /*sync=*/true);
}

RowStore::RowStore(std::shared_ptr<SharedDb> db,
                   rocksdb::ColumnFamilyHandle* cf, bool sync, std::string dir,
                   const TableOptions& o)
    : sst_options_(rocksdb::DBOptions(), RowColumnFamilyOptions(o)),
      shared_(std::move(db)),
      cf_(cf),
      sync_(sync),
      layout_(RowLayoutCode(o)),
      options_(o),
      dir_(std::move(dir)),
      tmp_dir_(absl::StrCat(dir_, "/ingest-", o.table_name)) {
  // The hot tier caches decoded rows; a cached 4 KiB block would hold one
  // ~100-byte row of a cold key for 40x its size (measured 4x over a 25 MB
  // budget: cold pulls +8%, pull+push +24%, peak RSS -2.6 MB).
  row_reads_.fill_cache = o.block_cache_bytes > 0;
}

std::string RowStore::TempSstPath() {
  return absl::StrCat(tmp_dir_, "/", next_file_.fetch_add(1), ".sst");
}

RowStore::~RowStore() = default;

rocksdb::DB* RowStore::db() const { return shared_->db.get(); }

absl::Status RowStore::MultiGet(absl::Span<const uint64_t> keys,
                                std::vector<std::string>* values) {
  values->assign(keys.size(), std::string());
  return MultiGetRows(db(), row_reads_, cf_, options_.num_shards, keys,
                      [values](size_t i, absl::string_view value) {
                        (*values)[i].assign(value.data(), value.size());
                      });
}

absl::StatusOr<bool> RowStore::Get(uint64_t key, std::string* value) {
  rocksdb::Status s =
      db()->Get(row_reads_, cf_, RowKeyOf(key, options_.num_shards), value);
  if (s.IsNotFound()) return false;
  if (!s.ok()) return FromRocks(s, "Get");
  if (value->size() < 4) return absl::DataLossError("short row");
  value->resize(value->size() - 4);
  return true;
}

void RowStore::PutRow(rocksdb::WriteBatch* batch, uint64_t key,
                      const float* row, uint32_t floats) {
  const uint32_t epoch = epoch_.load(std::memory_order_relaxed);
  rocksdb::Slice parts[2] = {
      rocksdb::Slice(reinterpret_cast<const char*>(row),
                     size_t{floats} * sizeof(float)),
      rocksdb::Slice(reinterpret_cast<const char*>(&epoch), 4)};
  const std::string k = RowKeyOf(key, options_.num_shards);
  rocksdb::Slice key_slice(k);
  batch->Put(cf_, rocksdb::SliceParts(&key_slice, 1),
             rocksdb::SliceParts(parts, 2));
}

// The tombstone lets the next delta carry the deletion.
void RowStore::DeleteRow(rocksdb::WriteBatch* batch, uint64_t key) {
  batch->Delete(cf_, RowKeyOf(key, options_.num_shards));
  std::string k(1, 'x');
  PutBe(&k, key, 8);
  const uint32_t epoch = epoch_.load(std::memory_order_relaxed);
  batch->Put(cf_, k, rocksdb::Slice(reinterpret_cast<const char*>(&epoch), 4));
}

void RowStore::PutSequence(rocksdb::WriteBatch* batch, uint32_t shard,
                           uint64_t writer, uint64_t sequence) {
  char v[8];
  std::memcpy(v, &sequence, 8);
  batch->Put(cf_, SequenceKey(shard, writer), rocksdb::Slice(v, 8));
}

void RowStore::PutShardLsn(rocksdb::WriteBatch* batch, uint32_t shard,
                           uint64_t lsn) {
  std::string k(1, 'l');
  PutBe(&k, shard, 4);
  batch->Put(cf_, k, rocksdb::Slice(reinterpret_cast<const char*>(&lsn), 8));
}

absl::Status RowStore::WriteUnlogged(rocksdb::WriteBatch* batch) {
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  return FromRocks(db()->Write(wo, batch), "write without WAL");
}

absl::Status RowStore::FlushMemtable() {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  return FromRocks(db()->Flush(fo, cf_), "flush memtable");
}

absl::Status RowStore::IngestRound(SstRound* round) {
  if (round->lsns.empty() && round->rows.empty()) return absl::OkStatus();
  // 'l' < 'q' < 's': cuts, then sequences, then rows, each in key order.
  std::sort(round->lsns.begin(), round->lsns.end());
  std::sort(round->sequences.begin(), round->sequences.end(),
            [](const SstRound::Sequence& a, const SstRound::Sequence& b) {
              return a.shard != b.shard ? a.shard < b.shard
                                        : a.writer < b.writer;
            });
  // Rows in row-key order, (shard, key); each key's shard hashed once.
  const uint32_t shards = options_.num_shards;
  std::vector<std::pair<uint32_t, const RowRef*>> order;
  order.reserve(round->rows.size());
  for (const RowRef& r : round->rows) {
    order.emplace_back(ShardOf(r.key, shards), &r);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first
                              : a.second->key < b.second->key;
  });
  const std::string path = TempSstPath();
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), sst_options_, cf_);
  rocksdb::Status s = writer.Open(path);
  std::string k, v;
  for (size_t i = 0; s.ok() && i < round->lsns.size(); ++i) {
    k.assign(1, 'l');
    PutBe(&k, round->lsns[i].first, 4);
    v.assign(reinterpret_cast<const char*>(&round->lsns[i].second), 8);
    s = writer.Put(k, v);
  }
  for (size_t i = 0; s.ok() && i < round->sequences.size(); ++i) {
    const SstRound::Sequence& q = round->sequences[i];
    v.assign(reinterpret_cast<const char*>(&q.sequence), 8);
    s = writer.Put(SequenceKey(q.shard, q.writer), v);
  }
  const uint32_t epoch = epoch_.load(std::memory_order_relaxed);
  for (size_t i = 0; s.ok() && i < order.size(); ++i) {
    const RowRef& r = *order[i].second;
    k = RowKey(order[i].first, r.key);
    v.assign(reinterpret_cast<const char*>(r.row),
             size_t{r.floats} * sizeof(float));
    v.append(reinterpret_cast<const char*>(&epoch), 4);
    s = writer.Put(k, v);
  }
  if (s.ok()) s = writer.Finish();  // syncs the file
  if (s.ok()) {
    rocksdb::IngestExternalFileOptions io;
    io.move_files = true;           // a hard link: no copy
    io.allow_global_seqno = true;   // newer than everything before it
    io.write_global_seqno = false;  // seqno in the MANIFEST, file untouched
    io.ingest_behind = false;       // these rows are the newest
    s = db()->IngestExternalFile(cf_, {path}, io);
  }
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return FromRocks(s, "ingest write-back file " + path);
}

absl::Status RowStore::ForEachShardLsn(
    const std::function<void(uint32_t, uint64_t)>& fn) {
  std::unique_ptr<rocksdb::Iterator> it(
      db()->NewIterator(rocksdb::ReadOptions(), cf_));
  for (it->Seek("l"); it->Valid() && it->key().starts_with("l"); it->Next()) {
    if (it->key().size() != 5 || it->value().size() != 8) {
      return absl::DataLossError(absl::StrCat(
          "malformed shard LSN record (key ", it->key().size(),
          " bytes, value ", it->value().size(), "; expected 5 and 8)"));
    }
    uint64_t lsn;
    std::memcpy(&lsn, it->value().data(), 8);
    fn(uint32_t(GetBe(it->key().data() + 1, 4)), lsn);
  }
  return FromRocks(it->status(), "scan shard LSNs");
}

absl::Status RowStore::Write(rocksdb::WriteBatch* batch) {
  return Write(batch, sync_);
}

absl::Status RowStore::ForEachSequence(
    const std::function<void(uint32_t, uint64_t, uint64_t)>& fn) {
  std::unique_ptr<rocksdb::Iterator> it(
      db()->NewIterator(rocksdb::ReadOptions(), cf_));
  for (it->Seek("q"); it->Valid() && it->key().starts_with("q"); it->Next()) {
    if (it->key().size() != 13 || it->value().size() != 8) {
      return absl::DataLossError("malformed sequence record");
    }
    uint64_t seq;
    std::memcpy(&seq, it->value().data(), 8);
    fn(uint32_t(GetBe(it->key().data() + 1, 4)), GetBe(it->key().data() + 5, 8),
       seq);
  }
  return FromRocks(it->status(), "scan sequences");
}

absl::Status RowStore::RewriteRows(
    const std::function<void(uint64_t, const float*, uint32_t,
                             rocksdb::WriteBatch*)>& fn) {
  const rocksdb::Snapshot* snap = db()->GetSnapshot();
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  std::unique_ptr<rocksdb::Iterator> it(db()->NewIterator(ro, cf_));
  rocksdb::WriteBatch batch;
  std::vector<float> row;
  absl::Status st;
  for (it->Seek("s"); st.ok() && it->Valid() && it->key().starts_with("s");
       it->Next()) {
    row.resize((it->value().size() - 4) / sizeof(float));
    std::memcpy(row.data(), it->value().data(), row.size() * sizeof(float));
    fn(KeyOfRowKey(absl::string_view(it->key().data(), it->key().size())),
       row.data(), row.size(), &batch);
    if (batch.Count() >= 4096) {
      st = Write(&batch);
      batch.Clear();
    }
  }
  if (st.ok()) st = FromRocks(it->status(), "scan rows");
  if (st.ok() && batch.Count() > 0) st = Write(&batch);
  it.reset();
  db()->ReleaseSnapshot(snap);
  return st;
}

absl::Status RowStore::SyncWal() { return FromRocks(db()->SyncWAL(), "sync"); }

absl::Status RowStore::Write(rocksdb::WriteBatch* batch, bool sync) {
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  return FromRocks(db()->Write(wo, batch), "Write");
}

absl::Status RowStore::PutEpoch(uint32_t epoch) {
  rocksdb::WriteBatch batch;
  batch.Put(cf_, "e", rocksdb::Slice(reinterpret_cast<const char*>(&epoch), 4));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  absl::Status st = FromRocks(db()->Write(wo, &batch), "write epoch");
  if (st.ok()) epoch_ = epoch;
  return st;
}

absl::Status RowStore::Checkpoint(const std::string& dir) {
  if (absl::Status st = PutEpoch(epoch_ + 1); !st.ok()) return st;
  rocksdb::Checkpoint* raw = nullptr;
  absl::Status st =
      FromRocks(rocksdb::Checkpoint::Create(db(), &raw), "checkpoint");
  if (!st.ok()) return st;
  std::unique_ptr<rocksdb::Checkpoint> cp(raw);
  return FromRocks(cp->CreateCheckpoint(dir), "checkpoint " + dir);
}

uint64_t RowStore::EstimateRows() const {
  uint64_t n = 0;
  db()->GetIntProperty(cf_, "rocksdb.estimate-num-keys", &n);
  return n;
}

uint64_t RowStore::DiskBytes() const {
  uint64_t sst = 0, mem = 0;
  db()->GetIntProperty(cf_, "rocksdb.total-sst-files-size", &sst);
  db()->GetIntProperty(cf_, "rocksdb.cur-size-all-mem-tables", &mem);
  return sst + mem;
}

}  // namespace sampan
