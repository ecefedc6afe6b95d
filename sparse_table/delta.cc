// RowStore's delta snapshots and SST ingestion (format in row_store.h).

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "rocksdb/sst_file_writer.h"
#include "sparse_table/accessor.h"
#include "sparse_table/row_store.h"
#include "sparse_table/snapshot_file.h"

namespace sampan {
namespace {

uint64_t BeKey(const rocksdb::Slice& k, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | uint8_t(k[at + i]);
  return v;
}

uint32_t Le32(const rocksdb::Slice& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

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
  absl::StatusOr<std::unique_ptr<DeltaWriter>> w =
      DeltaWriter::Create(path, token.epoch, layout_);
  for (it->SeekToFirst(); w.ok() && it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key(), v = it->value();
    if (k[0] == 'q' && k.size() == 13) {
      uint64_t seq;
      std::memcpy(&seq, v.data(), 8);
      (*w)->Sequence(BeKey(k, 5, 8), uint32_t(BeKey(k, 1, 4)), seq);
    } else if (k[0] == 's' && k.size() == 13 && v.size() >= 4 &&
               Le32(v, v.size() - 4) == token.epoch) {
      (*w)->Row(BeKey(k, 5, 8), reinterpret_cast<const float*>(v.data()),
                (v.size() - 4) / sizeof(float));
    } else if (k[0] == 'x' && k.size() == 9 && Le32(v, 0) == token.epoch) {
      // Re-created after the shrink? Then the row record above wins: a
      // deletion is written only when the row is absent.
      const uint64_t key = BeKey(k, 1, 8);
      std::string ignored;
      if (!db()->Get(ro, cf_, RowKeyOf(key, options_.num_shards), &ignored)
               .IsNotFound()) {
        continue;
      }
      (*w)->Deleted(key);
    }
  }
  absl::Status st = !w.ok() ? w.status()
                    : it->status().ok()
                        ? absl::OkStatus()
                        : absl::DataLossError(it->status().ToString());
  it.reset();
  db()->ReleaseSnapshot(token.snapshot);
  if (st.ok()) st = (*w)->Commit();
  return st;
}

absl::Status RowStore::ApplyDelta(const std::string& path) {
  absl::StatusOr<std::unique_ptr<DeltaReader>> r = DeltaReader::Open(path);
  if (!r.ok()) return r.status();
  if (absl::Status st = CheckRowLayout(options_, (*r)->layout(), path);
      !st.ok()) {
    return st;
  }
  const uint64_t epoch = (*r)->epoch();
  if (epoch != epoch_) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " ends epoch ", epoch, " but the table is at ",
                     epoch_.load(), ": apply deltas in order"));
  }
  std::vector<std::pair<std::string, std::string>> puts;
  std::vector<std::string> deletes;
  DeltaRecord rec;
  while ((*r)->Next(&rec)) {
    if (rec.type == kDeltaRow) {
      std::string value(reinterpret_cast<const char*>(rec.floats.data()),
                        rec.floats.size() * sizeof(float));
      const uint32_t e = epoch;
      value.append(reinterpret_cast<const char*>(&e), 4);
      puts.emplace_back(RowKeyOf(rec.key, options_.num_shards),
                        std::move(value));
    } else if (rec.type == kDeltaDeleted) {
      deletes.push_back(RowKeyOf(rec.key, options_.num_shards));
    } else {
      puts.emplace_back(
          SequenceKey(rec.shard, rec.key),
          std::string(reinterpret_cast<const char*>(&rec.sequence), 8));
    }
  }
  if (!(*r)->status().ok()) return (*r)->status();
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
    puts.emplace_back(RowKeyOf(key, options_.num_shards), std::move(value));
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
