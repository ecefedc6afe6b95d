// RowStore's delta snapshots and SST ingestion (format in row_store.h).

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "rocksdb/sst_file_writer.h"
#include "sparse_table/row_store.h"

namespace sampan {
namespace {

constexpr char kMagic[8] = {'S', 'M', 'P', 'D', 'E', 'L', 'T', 'A'};
constexpr uint32_t kVersion = 1;
enum : uint8_t { kEnd = 0, kRow = 1, kDeleted = 2, kSequence = 3 };

uint64_t BeKey(const rocksdb::Slice& k, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | uint8_t(k[at + i]);
  return v;
}

std::string EncodeKey(char prefix, uint64_t v, int bytes) {
  std::string k(1, prefix);
  for (int i = bytes - 1; i >= 0; --i) k.push_back(char(v >> (8 * i)));
  return k;
}

uint32_t Le32(const rocksdb::Slice& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

class Writer {
 public:
  explicit Writer(std::FILE* f) : f_(f) {}
  template <typename T>
  void Put(const T& v) {
    ok_ &= std::fwrite(&v, sizeof(T), 1, f_) == 1;
  }
  void PutBytes(const void* p, size_t n) {
    ok_ &= n == 0 || std::fwrite(p, n, 1, f_) == 1;
  }
  bool ok() const { return ok_; }

 private:
  std::FILE* f_;
  bool ok_ = true;
};

class Reader {
 public:
  explicit Reader(std::FILE* f) : f_(f) {}
  template <typename T>
  bool Get(T* v) {
    return std::fread(v, sizeof(T), 1, f_) == 1;
  }
  bool GetBytes(void* p, size_t n) {
    return n == 0 || std::fread(p, n, 1, f_) == 1;
  }

 private:
  std::FILE* f_;
};

}  // namespace

absl::StatusOr<RowStore::DeltaToken> RowStore::BeginDelta() {
  DeltaToken token;
  token.epoch = epoch_;
  if (absl::Status st = PutEpoch(token.epoch + 1); !st.ok()) return st;
  token.snapshot = db()->GetSnapshot();
  return token;
}

absl::Status RowStore::WriteDelta(const std::string& path, DeltaToken token) {
  rocksdb::ReadOptions ro;
  ro.snapshot = token.snapshot;
  std::unique_ptr<rocksdb::Iterator> it(db()->NewIterator(ro, cf_));
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    db()->ReleaseSnapshot(token.snapshot);
    return absl::UnavailableError(absl::StrCat("cannot create ", tmp));
  }
  Writer w(f);
  w.PutBytes(kMagic, 8);
  w.Put(kVersion);
  w.Put(uint32_t{0});
  w.Put(uint64_t{token.epoch});
  uint64_t records = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key(), v = it->value();
    if (k[0] == 'q' && k.size() == 13) {
      w.Put(kSequence);
      w.Put(BeKey(k, 5, 8));
      w.Put(uint32_t(BeKey(k, 1, 4)));
      w.PutBytes(v.data(), 8);
    } else if (k[0] == 'r' && v.size() >= 4 &&
               Le32(v, v.size() - 4) == token.epoch) {
      const uint32_t n = (v.size() - 4) / sizeof(float);
      w.Put(kRow);
      w.Put(BeKey(k, 1, 8));
      w.Put(n);
      w.PutBytes(v.data(), v.size() - 4);
    } else if (k[0] == 'x' && Le32(v, 0) == token.epoch) {
      // Re-created after the shrink? Then the row record above wins: a
      // deletion is written only when the row is absent.
      std::string row_key = k.ToString();
      row_key[0] = 'r';
      std::string ignored;
      if (!db()->Get(ro, cf_, row_key, &ignored).IsNotFound()) continue;
      w.Put(kDeleted);
      w.Put(BeKey(k, 1, 8));
    } else {
      continue;
    }
    ++records;
  }
  w.Put(kEnd);
  w.Put(records);
  absl::Status st = it->status().ok()
                        ? absl::OkStatus()
                        : absl::DataLossError(it->status().ToString());
  it.reset();
  db()->ReleaseSnapshot(token.snapshot);
  const bool flushed = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  std::fclose(f);
  if (st.ok() && !(w.ok() && flushed)) {
    st = absl::UnavailableError(absl::StrCat("write ", tmp));
  }
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    st = absl::UnavailableError(absl::StrCat("rename to ", path));
  }
  return st;
}

absl::Status RowStore::ApplyDelta(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("no ", path));
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(f, &std::fclose);
  Reader r(f);
  char magic[8];
  uint32_t version, zero;
  uint64_t epoch;
  if (!r.GetBytes(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 ||
      !r.Get(&version) || version != kVersion || !r.Get(&zero) ||
      !r.Get(&epoch)) {
    return absl::DataLossError(absl::StrCat(path, ": not a delta file"));
  }
  if (epoch != epoch_) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " ends epoch ", epoch, " but the table is at ",
                     epoch_.load(), ": apply deltas in order"));
  }
  std::vector<std::pair<std::string, std::string>> puts;
  std::vector<std::string> deletes;
  uint64_t records = 0, expected = ~0ull;
  for (;;) {
    uint8_t type;
    uint64_t key;
    if (!r.Get(&type)) break;
    if (type == kEnd) {
      r.Get(&expected);
      break;
    }
    if (!r.Get(&key)) break;
    ++records;
    if (type == kRow) {
      uint32_t n;
      if (!r.Get(&n) || n > (1u << 20)) break;
      std::string value(size_t{n} * 4 + 4, '\0');
      if (!r.GetBytes(value.data(), size_t{n} * 4)) break;
      const uint32_t e = epoch;
      std::memcpy(value.data() + size_t{n} * 4, &e, 4);
      puts.emplace_back(EncodeKey('r', key, 8), std::move(value));
    } else if (type == kDeleted) {
      deletes.push_back(EncodeKey('r', key, 8));
    } else if (type == kSequence) {
      uint32_t shard;
      std::string seq(8, '\0');
      if (!r.Get(&shard) || !r.GetBytes(seq.data(), 8)) break;
      puts.emplace_back(
          EncodeKey('q', shard, 4) + EncodeKey('q', key, 8).substr(1),
          std::move(seq));
    } else {
      break;
    }
  }
  if (records != expected) {
    return absl::DataLossError(absl::StrCat(path, ": truncated or corrupt"));
  }
  uint32_t next = uint32_t(epoch) + 1;
  puts.emplace_back("e", std::string(reinterpret_cast<const char*>(&next), 4));
  absl::Status st = IngestSst(puts, deletes);
  if (st.ok()) epoch_ = next;
  return st;
}

absl::Status RowStore::Ingest(
    std::vector<std::pair<uint64_t, std::vector<float>>> rows) {
  const uint32_t e = epoch_;
  std::vector<std::pair<std::string, std::string>> puts;
  puts.reserve(rows.size());
  for (auto& [key, floats] : rows) {
    std::string value(reinterpret_cast<const char*>(floats.data()),
                      floats.size() * sizeof(float));
    value.append(reinterpret_cast<const char*>(&e), 4);
    puts.emplace_back(EncodeKey('r', key, 8), std::move(value));
  }
  return IngestSst(puts, {});
}

// SstFileWriter wants keys in order; a key both put and deleted keeps the
// put (a delta never holds both).
absl::Status RowStore::IngestSst(
    std::vector<std::pair<std::string, std::string>>& puts,
    const std::vector<std::string>& deletes) {
  std::vector<std::pair<std::string, const std::string*>> ops;
  for (auto& [k, v] : puts) ops.emplace_back(k, &v);
  for (const std::string& k : deletes) ops.emplace_back(k, nullptr);
  if (ops.empty()) return absl::OkStatus();
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) {
    return a.first < b.first || (a.first == b.first && a.second && !b.second);
  });
  const std::string sst = TempSstPath();
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), sst_options_, cf_);
  rocksdb::Status s = writer.Open(sst);
  for (size_t i = 0; s.ok() && i < ops.size(); ++i) {
    if (i > 0 && ops[i].first == ops[i - 1].first) continue;
    s = ops[i].second ? writer.Put(ops[i].first, *ops[i].second)
                      : writer.Delete(ops[i].first);
  }
  if (s.ok()) s = writer.Finish();
  if (s.ok()) {
    rocksdb::IngestExternalFileOptions io;
    io.move_files = true;
    s = db()->IngestExternalFile(cf_, {sst}, io);
  }
  std::error_code ec;
  std::filesystem::remove(sst, ec);
  if (!s.ok())
    return absl::InternalError(absl::StrCat("ingest: ", s.ToString()));
  return absl::OkStatus();
}

}  // namespace sampan
