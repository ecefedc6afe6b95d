// SparsePartReader: a part read in chunks gives exactly ReadSparsePart's
// rows, and a corrupt, truncated or other-width part is refused at Open.
#include "trainer/model_export.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace sampan {
namespace {

constexpr int kDim = 5;

std::string WritePart(const std::string& name, uint64_t n) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < n; ++k) keys.push_back(k * 2654435761u + 1);
  RowReader read = [](absl::Span<const uint64_t> ks, float* out) {
    for (uint64_t k : ks) {
      for (int j = 0; j < kDim; ++j) *out++ = float(k % 1000) + 0.25f * j;
    }
    return absl::OkStatus();
  };
  EXPECT_TRUE(ExportSparsePart(dir, 0, keys, kDim, read).ok());
  return dir;
}

std::string PartFile(const std::string& dir) {
  return dir + "/sparse-00000.bin";
}

TEST(SparsePartReader, ReadsInChunksWhatReadSparsePartReads) {
  const std::string dir = WritePart("chunks", 1000);
  absl::StatusOr<SparsePart> whole = ReadSparsePart(dir, 0, kDim);
  ASSERT_TRUE(whole.ok()) << whole.status();
  auto reader = SparsePartReader::Open(dir, 0, 0);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->row_dim(), kDim);
  EXPECT_EQ((*reader)->rows(), 1000u);
  SparsePart chunk, all;
  absl::StatusOr<bool> more;
  int chunks = 0;
  while ((more = (*reader)->Next(7, &chunk)).ok() && *more) {
    ASSERT_LE(chunk.keys.size(), 7u);
    ASSERT_EQ(chunk.rows.size(), chunk.keys.size() * kDim);
    all.keys.insert(all.keys.end(), chunk.keys.begin(), chunk.keys.end());
    all.rows.insert(all.rows.end(), chunk.rows.begin(), chunk.rows.end());
    ++chunks;
  }
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_EQ(chunks, 143);
  EXPECT_EQ(all.keys, whole->keys);
  EXPECT_EQ(all.rows, whole->rows);
  EXPECT_TRUE(chunk.keys.empty());
}

TEST(SparsePartReader, RefusesCorruptTruncatedAndOtherWidthParts) {
  const std::string dir = WritePart("bad", 300);
  auto wide = SparsePartReader::Open(dir, 0, kDim + 1);
  ASSERT_FALSE(wide.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(wide.status())) << wide.status();
  {
    std::fstream f(PartFile(dir),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x40;
    f.seekp(100);
    f.write(&c, 1);
  }
  auto corrupt = SparsePartReader::Open(dir, 0, kDim);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_TRUE(absl::IsDataLoss(corrupt.status())) << corrupt.status();
  EXPECT_TRUE(absl::StrContains(corrupt.status().message(), "sparse-00000"))
      << corrupt.status();
  const std::string cut = WritePart("cut", 300);
  std::filesystem::resize_file(PartFile(cut),
                               std::filesystem::file_size(PartFile(cut)) - 4);
  auto truncated = SparsePartReader::Open(cut, 0, kDim);
  ASSERT_FALSE(truncated.ok());
  EXPECT_TRUE(absl::IsDataLoss(truncated.status())) << truncated.status();
  EXPECT_TRUE(absl::IsNotFound(
      SparsePartReader::Open(dir + "-missing", 0, kDim).status()));
}

}  // namespace
}  // namespace sampan
