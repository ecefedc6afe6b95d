// Reading a table's RocksDB files without opening the table: SnapshotKeys
// and CheckTableLayout (sparse_table.h).
#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rocksdb/db.h"
#include "sparse_table/accessor.h"
#include "sparse_table/row_store.h"
#include "sparse_table/snapshot_file.h"
#include "sparse_table/sparse_table.h"

namespace sampan {
namespace {

// Keeps a read-only open from writing its LOG into the directory it reads.
class DiscardLogger : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char*, va_list) override {}
};

// Opens the database in `dir` read-only (writing nothing into it, so a
// verified checkpoint stays verified) and calls fn with the column family
// `table`, or with null when the database has no such table.
absl::Status WithTableReadOnly(
    const std::string& dir, const std::string& table,
    const std::function<absl::Status(rocksdb::DB*,
                                     rocksdb::ColumnFamilyHandle*)>& fn) {
  rocksdb::DBOptions dbo;
  dbo.info_log = std::make_shared<DiscardLogger>();
  std::vector<std::string> names;
  absl::Status st =
      FromRocksStatus(rocksdb::DB::ListColumnFamilies(dbo, dir, &names),
                      "list column families of " + dir);
  if (!st.ok()) return st;
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const std::string& n : names) {
    descs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  st = FromRocksStatus(
      rocksdb::DB::OpenForReadOnly(dbo, dir, descs, &handles, &raw),
      "open " + dir + " read-only");
  if (!st.ok()) return st;
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::ColumnFamilyHandle* cf = nullptr;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == table) cf = handles[i];
  }
  st = fn(db.get(), cf);
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    db->DestroyColumnFamilyHandle(h);
  }
  db->Close();
  return st;
}

uint64_t BigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> SnapshotKeys(
    const std::string& snapshot_dir, const std::string& table_name,
    uint32_t part, uint32_t parts) {
  std::vector<uint64_t> keys;
  absl::Status st = WithTableReadOnly(
      snapshot_dir, table_name,
      [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
        if (cf == nullptr) return absl::OkStatus();
        std::unique_ptr<rocksdb::Iterator> it(
            db->NewIterator(rocksdb::ReadOptions(), cf));
        // Rows under 's' + shard + key, or, in a snapshot from before
        // shard prefixes, 'r' + key (row_store.h).
        for (const char* prefix : {"r", "s"}) {
          const size_t at = prefix[0] == 'r' ? 1 : 5;
          for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix) &&
                                 it->key().size() == at + 8;
               it->Next()) {
            const uint64_t key = BigEndian64(it->key().data() + at);
            if (key % parts == part) keys.push_back(key);
          }
        }
        return FromRocksStatus(it->status(), "scan " + snapshot_dir);
      });
  if (!st.ok()) return st;
  std::sort(keys.begin(), keys.end());
  return keys;
}

absl::Status CheckTableLayout(const TableOptions& o) {
  std::error_code ec;
  if (o.backend == Backend::kMemory) {
    // The full snapshot a memory table loads when it opens (sparse_table.h).
    const std::string path = o.data_dir + "/" + o.table_name + ".snapshot";
    if (o.data_dir.empty() || !std::filesystem::exists(path, ec)) {
      return absl::OkStatus();
    }
    absl::StatusOr<std::unique_ptr<DeltaReader>> r = DeltaReader::Open(path);
    if (!r.ok()) return r.status();
    return CheckRowLayout(o, (*r)->layout(), path);
  }
  if (!std::filesystem::exists(o.data_dir + "/CURRENT", ec)) {
    return absl::OkStatus();
  }
  return WithTableReadOnly(
      o.data_dir, o.table_name,
      [&](rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf) {
        if (cf == nullptr) return absl::OkStatus();
        std::string value;
        const rocksdb::Status n =
            db->Get(rocksdb::ReadOptions(), cf, "n", &value);
        if (n.ok() && value.size() == 4) {
          uint32_t shards;
          std::memcpy(&shards, value.data(), 4);
          if (shards != o.num_shards) {
            return absl::FailedPreconditionError(absl::StrCat(
                o.data_dir, ": table '", o.table_name, "' was written with ",
                shards, " shards, not ", o.num_shards,
                " (table.num_shards is fixed for a table's life)"));
          }
        }
        const rocksdb::Status s =
            db->Get(rocksdb::ReadOptions(), cf, "m", &value);
        if (s.ok() && value.size() == 4) {
          uint32_t code;
          std::memcpy(&code, value.data(), 4);
          return CheckRowLayout(o, code, o.data_dir);
        }
        if (!s.ok() && !s.IsNotFound()) {
          return FromRocksStatus(s, "read row layout in " + o.data_dir);
        }
        // No record (or a bad one, which opening reports): a table from
        // before layouts were recorded holds FP32 rows, if it holds any.
        std::unique_ptr<rocksdb::Iterator> it(
            db->NewIterator(rocksdb::ReadOptions(), cf));
        it->Seek("r");
        bool rows = it->Valid() && it->key().starts_with("r");
        it->Seek("s");
        rows = rows || (it->Valid() && it->key().starts_with("s"));
        return rows ? CheckRowLayout(o, 0, o.data_dir) : absl::OkStatus();
      });
}

}  // namespace sampan
