// Delta files (format in row_store.h), written and read record by record:
// RocksDB deltas, and the memory backend's full snapshots and deltas.
// Internal to sparse_table/.
#ifndef SAMPAN_SPARSE_TABLE_SNAPSHOT_FILE_H_
#define SAMPAN_SPARSE_TABLE_SNAPSHOT_FILE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sampan {

enum : uint8_t {
  kDeltaEnd = 0,
  kDeltaRow = 1,
  kDeltaDeleted = 2,
  kDeltaSequence = 3
};

// Writes `path` + ".tmp", then Commit fsyncs it and renames it to `path`,
// so `path` is either absent or whole. Not thread-safe.
class DeltaWriter {
 public:
  // Unavailable when the file cannot be created. `layout`: the rows'
  // RowLayoutCode (accessor.h), kept in the header.
  static absl::StatusOr<std::unique_ptr<DeltaWriter>> Create(
      const std::string& path, uint64_t epoch, uint32_t layout);
  ~DeltaWriter();  // without Commit: removes the temporary file

  void Row(uint64_t key, const float* floats, uint32_t n);
  void Deleted(uint64_t key);
  void Sequence(uint64_t writer, uint32_t shard, uint64_t sequence);
  // Writes the trailer (record count, CRC-32C of everything before it).
  absl::Status Commit();

 private:
  DeltaWriter(std::string path, std::FILE* f) : path_(path), f_(f) {}
  void Put(const void* p, size_t n);
  template <typename T>
  void Put(T v) {
    Put(&v, sizeof(T));
  }

  const std::string path_;
  std::FILE* f_;
  uint32_t crc_ = 0;
  uint64_t records_ = 0;
  bool ok_ = true;
};

// One record of a delta file.
struct DeltaRecord {
  uint8_t type;               // kDeltaRow, kDeltaDeleted or kDeltaSequence
  uint64_t key;               // the row's key, or the writer of a sequence
  std::vector<float> floats;  // kDeltaRow: the stored floats
  uint32_t shard = 0;         // kDeltaSequence
  uint64_t sequence = 0;      // kDeltaSequence
};

// Reads a whole delta file. DataLoss naming the file and byte offset when
// it is truncated, corrupt (CRC, version 2) or not a delta file.
class DeltaReader {
 public:
  static absl::StatusOr<std::unique_ptr<DeltaReader>> Open(
      const std::string& path);
  ~DeltaReader();
  uint64_t epoch() const { return epoch_; }
  // The rows' RowLayoutCode; 0 in files written before it was recorded.
  uint32_t layout() const { return layout_; }
  // The next record into *r; false at the end (check status()) or on error.
  bool Next(DeltaRecord* r);
  // After Next returned false: OK when the trailer checked out.
  const absl::Status& status() const { return status_; }

 private:
  DeltaReader(std::string path, std::FILE* f) : path_(path), f_(f) {}
  bool Get(void* p, size_t n);
  template <typename T>
  bool Get(T* v) {
    return Get(v, sizeof(T));
  }
  bool Fail(const std::string& what);

  const std::string path_;
  std::FILE* f_;
  uint32_t version_ = 0, layout_ = 0;
  uint64_t epoch_ = 0, offset_ = 0, records_ = 0;
  uint32_t crc_ = 0;
  absl::Status status_;
};

}  // namespace sampan

#endif  // SAMPAN_SPARSE_TABLE_SNAPSHOT_FILE_H_
