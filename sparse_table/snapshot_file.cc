#include "sparse_table/snapshot_file.h"

#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "sparse_table/crc32c.h"

namespace sampan {
namespace {

constexpr char kMagic[8] = {'S', 'M', 'P', 'D', 'E', 'L', 'T', 'A'};
// Version 2 adds the CRC-32C to the trailer; version 1 files still read.
constexpr uint32_t kVersion = 2;
// Larger rows than any accessor layout has: a corrupt length.
constexpr uint32_t kMaxFloats = 1u << 20;

}  // namespace

absl::StatusOr<std::unique_ptr<DeltaWriter>> DeltaWriter::Create(
    const std::string& path, uint64_t epoch, uint32_t layout) {
  std::FILE* f = std::fopen((path + ".tmp").c_str(), "wb");
  if (f == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot create ", path, ".tmp"));
  }
  std::unique_ptr<DeltaWriter> w(new DeltaWriter(path, f));
  w->Put(kMagic, 8);
  w->Put(kVersion);
  w->Put(layout);
  w->Put(epoch);
  return w;
}

DeltaWriter::~DeltaWriter() {
  if (f_ == nullptr) return;
  std::fclose(f_);
  std::remove((path_ + ".tmp").c_str());
}

void DeltaWriter::Put(const void* p, size_t n) {
  crc_ = crc32c::Extend(crc_, p, n);
  ok_ &= n == 0 || std::fwrite(p, n, 1, f_) == 1;
}

void DeltaWriter::Row(uint64_t key, const float* floats, uint32_t n) {
  Put(kDeltaRow);
  Put(key);
  Put(n);
  Put(floats, size_t{n} * sizeof(float));
  ++records_;
}

void DeltaWriter::Deleted(uint64_t key) {
  Put(kDeltaDeleted);
  Put(key);
  ++records_;
}

void DeltaWriter::Sequence(uint64_t writer, uint32_t shard, uint64_t seq) {
  Put(kDeltaSequence);
  Put(writer);
  Put(shard);
  Put(seq);
  ++records_;
}

absl::Status DeltaWriter::Commit() {
  Put(kDeltaEnd);
  Put(records_);
  const uint32_t masked = crc32c::Mask(crc_);
  ok_ &= std::fwrite(&masked, 4, 1, f_) == 1;
  ok_ &= std::fflush(f_) == 0 && fsync(fileno(f_)) == 0;
  ok_ &= std::fclose(f_) == 0;
  f_ = nullptr;
  const std::string tmp = path_ + ".tmp";
  if (!ok_ || std::rename(tmp.c_str(), path_.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("write ", path_));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DeltaReader>> DeltaReader::Open(
    const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("no ", path));
  std::unique_ptr<DeltaReader> r(new DeltaReader(path, f));
  char magic[8];
  if (!r->Get(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 ||
      !r->Get(&r->version_) || r->version_ < 1 || r->version_ > kVersion ||
      !r->Get(&r->layout_) || !r->Get(&r->epoch_)) {
    return absl::DataLossError(absl::StrCat(
        path, ": not a delta file (expected \"SMPDELTA\", version 1 to ",
        kVersion, ")"));
  }
  return r;
}

DeltaReader::~DeltaReader() { std::fclose(f_); }

bool DeltaReader::Get(void* p, size_t n) {
  if (n > 0 && std::fread(p, n, 1, f_) != 1) return false;
  crc_ = crc32c::Extend(crc_, p, n);
  offset_ += n;
  return true;
}

bool DeltaReader::Fail(const std::string& what) {
  status_ = absl::DataLossError(
      absl::StrCat(path_, " at byte ", offset_, ": ", what));
  return false;
}

bool DeltaReader::Next(DeltaRecord* r) {
  if (!status_.ok()) return false;
  if (!Get(&r->type)) return Fail("truncated: expected a record or trailer");
  if (r->type == kDeltaEnd) {
    uint64_t count;
    uint32_t masked;
    if (!Get(&count)) return Fail("truncated trailer");
    const uint32_t crc = crc_;  // of everything before the CRC itself
    if (count != records_) {
      return Fail(
          absl::StrCat("trailer counts ", count, " records, read ", records_));
    }
    if (version_ >= 2 &&
        (std::fread(&masked, 4, 1, f_) != 1 || crc32c::Unmask(masked) != crc)) {
      return Fail("CRC-32C mismatch");
    }
    if (std::fgetc(f_) != EOF) return Fail("bytes after the trailer");
    return false;
  }
  if (!Get(&r->key)) return Fail("truncated record");
  if (r->type == kDeltaRow) {
    uint32_t n;
    if (!Get(&n) || n > kMaxFloats) return Fail("bad row length");
    r->floats.resize(n);
    if (!Get(r->floats.data(), size_t{n} * sizeof(float))) {
      return Fail("truncated row");
    }
  } else if (r->type == kDeltaSequence) {
    if (!Get(&r->shard) || !Get(&r->sequence)) {
      return Fail("truncated sequence");
    }
  } else if (r->type != kDeltaDeleted) {
    return Fail(absl::StrCat("unknown record type ", int(r->type)));
  }
  ++records_;
  return true;
}

}  // namespace sampan
