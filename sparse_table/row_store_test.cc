// RowStore's key layout on real RocksDB: rows keyed by shard, so that a
// shard is one key range; tables written before shard prefixes are
// rewritten when opened; a table opened with another shard count is
// refused before it could miss every row.
#include "sparse_table/row_store.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/hash.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "sparse_table/accessor.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

TableOptions Options(const std::string& name, uint32_t shards) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  TableOptions o;
  o.backend = Backend::kRocksDb;
  o.data_dir = std::string(tmp ? tmp : "/tmp") + "/row_store_" + name;
  o.num_shards = shards;
  o.table_name = "t";
  return o;
}

std::string OldRowKey(uint64_t key) {
  std::string k(1, 'r');
  for (int i = 7; i >= 0; --i) k.push_back(char(key >> (8 * i)));
  return k;
}

// A stored value: three floats of the key and the epoch trailer.
std::string Value(uint64_t key) {
  const float f[3] = {float(key), float(key) / 2, -float(key)};
  const uint32_t epoch = 1;
  std::string v(reinterpret_cast<const char*>(f), sizeof(f));
  v.append(reinterpret_cast<const char*>(&epoch), 4);
  return v;
}

// Writes `keys` as a table from before shard prefixes would have: 'r' +
// key rows (and, with `half_done`, the first half again under the new keys,
// as a rewrite that died midway leaves them), with its row layout record.
void WriteOldTable(const TableOptions& o, const std::vector<uint64_t>& keys,
                   bool half_done) {
  std::filesystem::remove_all(o.data_dir);
  rocksdb::DBOptions dbo;
  dbo.create_if_missing = true;
  dbo.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> descs = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {o.table_name, rocksdb::ColumnFamilyOptions()}};
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(dbo, o.data_dir, descs, &cfs, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::WriteBatch batch;
  const uint32_t layout = RowLayoutCode(o);
  batch.Put(cfs[1], "m",
            rocksdb::Slice(reinterpret_cast<const char*>(&layout), 4));
  for (size_t i = 0; i < keys.size(); ++i) {
    batch.Put(cfs[1], OldRowKey(keys[i]), Value(keys[i]));
    if (half_done && i < keys.size() / 2) {
      batch.Put(cfs[1], RowKeyOf(keys[i], o.num_shards), Value(keys[i]));
    }
  }
  ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &batch).ok());
  for (auto* cf : cfs) db->DestroyColumnFamilyHandle(cf);
  ASSERT_TRUE(db->Close().ok());
}

std::vector<uint64_t> Keys(size_t n) {
  std::vector<uint64_t> keys;
  for (size_t i = 0; i < n; ++i) keys.push_back(Mix64(i * 7919 + 13));
  return keys;
}

// Every row of every shard, shard by shard: key -> stored floats.
std::map<uint64_t, std::vector<float>> AllRows(RowStore& store,
                                               uint32_t shards) {
  std::map<uint64_t, std::vector<float>> rows;
  for (uint32_t s = 0; s < shards; ++s) {
    uint64_t last = 0;
    bool first = true;
    absl::Status st = store.ForEachRowOfShard(
        s, [&](uint64_t key, const float* row, uint32_t n) {
          EXPECT_EQ(ShardOf(key, shards), s) << key;
          EXPECT_TRUE(first || key > last) << "not in key order";
          first = false;
          last = key;
          rows[key].assign(row, row + n);
          return absl::OkStatus();
        });
    EXPECT_TRUE(st.ok()) << st;
  }
  return rows;
}

void ExpectRowsOf(RowStore& store, uint32_t shards,
                  const std::vector<uint64_t>& keys) {
  std::map<uint64_t, std::vector<float>> rows = AllRows(store, shards);
  ASSERT_EQ(rows.size(), keys.size());
  for (uint64_t key : keys) {
    const std::vector<float> want = {float(key), float(key) / 2, -float(key)};
    EXPECT_EQ(rows[key], want) << key;
    std::string value;
    absl::StatusOr<bool> found = store.Get(key, &value);
    ASSERT_TRUE(found.ok()) << found.status();
    EXPECT_TRUE(*found) << key;
    EXPECT_EQ(value, Value(key).substr(0, 12)) << key;
  }
}

TEST(RowStoreTest, RowsFromBeforeShardPrefixesAreRewrittenWhenOpened) {
  for (bool half_done : {false, true}) {
    const TableOptions o = Options("old", 8);
    const std::vector<uint64_t> keys = Keys(3000);
    WriteOldTable(o, keys, half_done);
    {
      absl::StatusOr<std::unique_ptr<RowStore>> store = RowStore::Open(o);
      ASSERT_TRUE(store.ok()) << store.status();
      ExpectRowsOf(**store, 8, keys);
      std::vector<std::string> values;
      ASSERT_TRUE((*store)->MultiGet(keys, &values).ok());
      for (size_t i = 0; i < keys.size(); ++i) {
        EXPECT_EQ(values[i], Value(keys[i]).substr(0, 12));
      }
    }
    // Nothing is left under the old keys, and a second open rewrites
    // nothing.
    absl::StatusOr<std::vector<uint64_t>> listed =
        SnapshotKeys(o.data_dir, o.table_name, 0, 1);
    ASSERT_TRUE(listed.ok()) << listed.status();
    std::vector<uint64_t> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(*listed, sorted) << "a key listed twice or missing";
    absl::StatusOr<std::unique_ptr<RowStore>> again = RowStore::Open(o);
    ASSERT_TRUE(again.ok()) << again.status();
    ExpectRowsOf(**again, 8, keys);
  }
}

TEST(RowStoreTest, ATableOpenedWithAnotherShardCountIsRefused) {
  TableOptions o = Options("shards", 8);
  std::filesystem::remove_all(o.data_dir);
  const std::vector<uint64_t> keys = Keys(100);
  {
    absl::StatusOr<std::unique_ptr<RowStore>> store = RowStore::Open(o);
    ASSERT_TRUE(store.ok()) << store.status();
    rocksdb::WriteBatch batch;
    const float row[2] = {1, 2};
    for (uint64_t key : keys) (*store)->PutRow(&batch, key, row, 2);
    ASSERT_TRUE((*store)->Write(&batch, true).ok());
  }
  o.num_shards = 16;
  absl::Status checked = CheckTableLayout(o);
  EXPECT_EQ(checked.code(), absl::StatusCode::kFailedPrecondition) << checked;
  EXPECT_NE(checked.message().find("written with 8 shards, not 16"),
            std::string::npos)
      << checked;
  absl::StatusOr<std::unique_ptr<RowStore>> other = RowStore::Open(o);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition);
  o.num_shards = 8;
  other = RowStore::Open(o);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(AllRows(**other, 8).size(), keys.size());
}

TEST(RowStoreTest, DeletingAShardLeavesTheOthersWhole) {
  const TableOptions o = Options("delete", 4);
  std::filesystem::remove_all(o.data_dir);
  absl::StatusOr<std::unique_ptr<RowStore>> store = RowStore::Open(o);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::vector<uint64_t> keys = Keys(2000);
  rocksdb::WriteBatch batch;
  std::vector<uint64_t> per_shard(4, 0);
  const float row[1] = {3};
  for (uint64_t key : keys) {
    (*store)->PutRow(&batch, key, row, 1);
    ++per_shard[ShardOf(key, 4)];
    (*store)->PutSequence(&batch, ShardOf(key, 4), 7, 1);
  }
  ASSERT_TRUE((*store)->Write(&batch, true).ok());
  absl::StatusOr<uint64_t> deleted = (*store)->DeleteShard(2);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, per_shard[2]);
  std::map<uint64_t, std::vector<float>> rows = AllRows(**store, 4);
  EXPECT_EQ(rows.size(), keys.size() - per_shard[2]);
  for (uint64_t key : keys) {
    EXPECT_EQ(rows.count(key), ShardOf(key, 4) == 2 ? 0u : 1u) << key;
  }
  std::vector<uint32_t> sequenced;
  ASSERT_TRUE((*store)
                  ->ForEachSequence([&](uint32_t shard, uint64_t, uint64_t) {
                    sequenced.push_back(shard);
                  })
                  .ok());
  EXPECT_EQ(sequenced, (std::vector<uint32_t>{0, 1, 3}));
}

// An import's rows: in key order they go into one file; out of order (a
// memory table's export) into several, all ingested; abandoned, none.
TEST(RowStoreTest, AShardFileIngestsEveryRowAddedInAnyOrder) {
  const TableOptions o = Options("shard_file", 4);
  std::filesystem::remove_all(o.data_dir);
  absl::StatusOr<std::unique_ptr<RowStore>> store = RowStore::Open(o);
  ASSERT_TRUE(store.ok()) << store.status();
  std::vector<uint64_t> keys;
  for (uint64_t key : Keys(4000)) {
    if (ShardOf(key, 4) == 1) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  // Two ascending runs, the second below the first's end: two files.
  std::vector<uint64_t> order(keys.begin() + keys.size() / 2, keys.end());
  order.insert(order.end(), keys.begin(), keys.begin() + keys.size() / 2);
  {
    std::unique_ptr<RowStore::ShardFile> abandoned = (*store)->NewShardFile(1);
    const float row[1] = {9};
    for (uint64_t key : order) ASSERT_TRUE(abandoned->Add(key, row, 1).ok());
  }
  EXPECT_TRUE(AllRows(**store, 4).empty()) << "an abandoned file's rows";
  std::unique_ptr<RowStore::ShardFile> file = (*store)->NewShardFile(1);
  for (uint64_t key : order) {
    const float row[3] = {float(key), float(key) / 2, -float(key)};
    ASSERT_TRUE(file->Add(key, row, 3).ok());
  }
  EXPECT_TRUE(AllRows(**store, 4).empty()) << "visible before Ingest";
  absl::Status ingested = file->Ingest();
  ASSERT_TRUE(ingested.ok()) << ingested;
  ExpectRowsOf(**store, 4, keys);
  file.reset();
  // Every file was linked into the database or deleted.
  const std::string ingest_dir = o.data_dir + "/ingest-" + o.table_name;
  EXPECT_TRUE(std::filesystem::is_empty(ingest_dir)) << ingest_dir;
}

}  // namespace
}  // namespace sampan
